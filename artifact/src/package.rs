//! Zips one module the way `wsk action create NAME action.zip --kind wasm:0.1` uploads it.

use std::io::Write;

use anyhow::Context;

/// A zip archive holding exactly one file, `entry_name`, stored uncompressed: inflating a
/// megabyte of native code costs the executor milliseconds on every /init, far more than the
/// smaller upload saves once.
pub fn zip_single(entry_name: &str, bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o644);
    writer
        .start_file(entry_name, options)
        .context("starting zip entry")?;
    writer.write_all(bytes).context("writing zip entry")?;
    Ok(writer.finish().context("finishing zip")?.into_inner())
}

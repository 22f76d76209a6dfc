//! Zips one module the way `wsk action create NAME action.zip --kind wasm:0.1` uploads it.

use std::io::Write;

use anyhow::Context;

/// A zip archive holding exactly one file, `entry_name`, deflated.
pub fn zip_single(entry_name: &str, bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    writer
        .start_file(entry_name, options)
        .context("starting zip entry")?;
    writer.write_all(bytes).context("writing zip entry")?;
    Ok(writer.finish().context("finishing zip")?.into_inner())
}

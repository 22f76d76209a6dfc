//! Makes the precompiled artifacts the benchmarks send in /init: an operator key pair and a signed
//! zip of a module, through the `wasm-precompile` front end (outside the timed path).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

/// A signed precompiled zip and the public key the executor must trust for it.
#[derive(Debug, Clone)]
pub struct Precompiled {
    pub zip: PathBuf,
    pub public_key: PathBuf,
}

/// Creates `dir/operator.{pem,pub}` and `dir/<stem>.zip` from `wasm`, for `runtime`.
pub fn signed_zip(
    precompiler: &Path,
    runtime: &str,
    wasm: &Path,
    dir: &Path,
) -> anyhow::Result<Precompiled> {
    let public_key = keygen(precompiler, dir)?;
    let stem = wasm
        .file_stem()
        .map_or("action".into(), |s| s.to_string_lossy().into_owned());
    let zip = dir.join(format!("{stem}.zip"));
    compile_signed(precompiler, runtime, wasm, &[], dir, &zip)?;
    Ok(Precompiled { zip, public_key })
}

/// Creates the operator key pair `dir/operator.{pem,pub}` (replacing an old one); the public
/// key's path.
pub fn keygen(precompiler: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let key = dir.join("operator");
    // keygen refuses to overwrite a key (a reused scratch directory).
    for old in [key.with_extension("pem"), key.with_extension("pub")] {
        if old.exists() {
            std::fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
        }
    }
    run(Command::new(precompiler)
        .arg("keygen")
        .arg("--out")
        .arg(&key))?;
    Ok(key.with_extension("pub"))
}

/// Precompiles `wasm` for `runtime` with the compiler's own `flags`, signed with the key
/// [`keygen`] made in `dir`, into the zip `out`.
pub fn compile_signed(
    precompiler: &Path,
    runtime: &str,
    wasm: &Path,
    flags: &[String],
    dir: &Path,
    out: &Path,
) -> anyhow::Result<()> {
    run(Command::new(precompiler)
        .args(["compile", "--runtime", runtime, "--"])
        .arg(wasm)
        .args(flags)
        .arg("--sign-key")
        .arg(dir.join("operator.pem"))
        .arg("--zip")
        .arg("-o")
        .arg(out))
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let output = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    tracing::debug!(stdout = %String::from_utf8_lossy(&output.stdout).trim(), "precompiler");
    Ok(())
}

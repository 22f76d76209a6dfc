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
    let stem = wasm
        .file_stem()
        .map_or("action".into(), |s| s.to_string_lossy().into_owned());
    let zip = dir.join(format!("{stem}.zip"));
    run(Command::new(precompiler)
        .args(["compile", "--runtime", runtime, "--"])
        .arg(wasm)
        .arg("--sign-key")
        .arg(key.with_extension("pem"))
        .arg("--zip")
        .arg("-o")
        .arg(&zip))?;
    Ok(Precompiled {
        zip,
        public_key: key.with_extension("pub"),
    })
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

//! Records the locked versions of the Wasm runtimes so an artifact's envelope and the executor
//! that checks it name the very same runtime version.

use std::{env, fs, path::PathBuf};

const RUNTIMES: &[(&str, &str)] = &[
    ("wasmtime", "LOCKED_WASMTIME_VERSION"),
    ("wasmer", "LOCKED_WASMER_VERSION"),
    ("wamrx-sys", "LOCKED_WAMR_VERSION"),
];

fn main() {
    let lock = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"))
        .join("..")
        .join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    for (package, var) in RUNTIMES {
        let version = locked_version(&text, package).unwrap_or_else(|| "none".to_owned());
        println!("cargo:rustc-env={var}={version}");
    }
}

/// Finds `version = "…"` right after `name = "<package>"` in a Cargo.lock.
fn locked_version(lock: &str, package: &str) -> Option<String> {
    let needle = format!("name = \"{package}\"\n");
    let start = lock.find(&needle)? + needle.len();
    let line = lock[start..].lines().next()?;
    let version = line.strip_prefix("version = \"")?.strip_suffix('"')?;
    Some(version.to_owned())
}

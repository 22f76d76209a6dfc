//! Records the locked versions of the Wasm runtimes so an artifact's envelope and the executor
//! that checks it name the very same runtime version.

use std::{env, fs, path::PathBuf};

const RUNTIMES: &[(&str, &str)] = &[
    ("wasmtime", "LOCKED_WASMTIME_VERSION"),
    ("wasmer", "LOCKED_WASMER_VERSION"),
    ("wamrx-sys", "LOCKED_WAMR_VERSION"),
];

/// WAMR is built from the sources the `wamrx-sys` package ships (wamr/source), so the package
/// version pins the WAMR sources; artifacts name the WAMR version those sources are. The WAMR
/// executor backend and wasm-precompile-wamr refuse to start when their `core/version.h` says
/// otherwise, so a new package version cannot slip in under an old label.
const WAMR_IN_WAMRX_SYS: &[(&str, &str)] = &[("0.3.0", "2.4.3")];

fn main() {
    let lock = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"))
        .join("..")
        .join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = fs::read_to_string(&lock).unwrap_or_default();
    for (package, var) in RUNTIMES {
        let version = match locked_version(&text, package) {
            Some(v) if *package == "wamrx-sys" => WAMR_IN_WAMRX_SYS
                .iter()
                .find(|(crate_version, _)| *crate_version == v)
                .map_or_else(|| format!("wamrx-sys-{v}"), |(_, wamr)| (*wamr).to_owned()),
            Some(v) => v,
            None => "none".to_owned(),
        };
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

//! Where the WAMR sources are. In order:
//!
//! 1. `WAMR_SOURCE_DIR`, when set: a WAMR checkout (its root, holding `core/`) of the same version;
//! 2. the `wasm-micro-runtime/` directory of the `wamrx-sys` package at the version Cargo.lock
//!    pins, in cargo's registry cache (`$CARGO_HOME/registry/src/<index>/wamrx-sys-<version>/`).
//!    Cargo has unpacked it before any of our build scripts runs, because this crate depends on
//!    the package; the `.cargo-ok` marker says the unpacking finished;
//! 3. wherever `cargo metadata` says that package lives (vendored sources, other registries).
//!
//! Whatever is found must hold WAMR's embedding headers and a `core/version.h`, whose version
//! is returned so the libraries can name the WAMR they were built from.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

/// The package whose WAMR tree we build.
const PACKAGE: &str = "wamrx-sys";
/// The WAMR tree inside that package.
const TREE: &str = "wasm-micro-runtime";

/// A WAMR source tree ready to build.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The WAMR root: the directory holding `core/` and `build-scripts/`.
    pub root: PathBuf,
    /// WAMR's own version, from `core/version.h`, e.g. `2.4.3`.
    pub version: String,
    /// Where the tree came from, for messages.
    pub origin: String,
}

impl Sources {
    pub fn core(&self) -> PathBuf {
        self.root.join("core")
    }

    pub fn include_dir(&self) -> PathBuf {
        self.root.join("core/iwasm/include")
    }
}

/// Finds the sources (see the module documentation) and prints the `rerun-if` lines for them.
pub fn locate() -> anyhow::Result<Sources> {
    println!("cargo:rerun-if-env-changed=WAMR_SOURCE_DIR");
    if let Some(dir) = env::var_os("WAMR_SOURCE_DIR") {
        return checked(PathBuf::from(dir), "WAMR_SOURCE_DIR".to_owned());
    }
    let version = locked_version()?;
    let package = registry_package(&version)
        .or_else(|| metadata_package(&version))
        .with_context(|| {
            format!(
                "the {PACKAGE} {version} package is neither in cargo's registry cache nor known to `cargo metadata`; \
                 run `cargo fetch`, or set WAMR_SOURCE_DIR to a WAMR checkout"
            )
        })?;
    checked(
        package.join(TREE),
        format!("{PACKAGE} {version} ({})", package.display()),
    )
}

/// The version of [`PACKAGE`] in the workspace's Cargo.lock.
fn locked_version() -> anyhow::Result<String> {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR is not set")?);
    let lock = manifest_dir
        .ancestors()
        .map(|dir| dir.join("Cargo.lock"))
        .find(|path| path.is_file())
        .context("no Cargo.lock above the crate")?;
    let text = fs::read_to_string(&lock).with_context(|| format!("reading {}", lock.display()))?;
    let needle = format!("name = \"{PACKAGE}\"\nversion = \"");
    let start = text
        .find(&needle)
        .with_context(|| format!("{} does not lock {PACKAGE}", lock.display()))?
        + needle.len();
    let version = text[start..].split('"').next().unwrap_or_default();
    if version.is_empty() {
        bail!("{} has no version for {PACKAGE}", lock.display());
    }
    Ok(version.to_owned())
}

/// The unpacked package in cargo's registry cache, if there.
fn registry_package(version: &str) -> Option<PathBuf> {
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))?;
    let mut indexes: Vec<PathBuf> = fs::read_dir(cargo_home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .collect();
    // Several registries (crates.io, a mirror) may hold it; any complete copy is the same
    // bytes, checked by cargo against the lock's checksum. Sort for a stable choice.
    indexes.sort();
    indexes
        .into_iter()
        .map(|index| index.join(format!("{PACKAGE}-{version}")))
        .find(|dir| dir.join(".cargo-ok").is_file())
}

/// The package's directory as `cargo metadata` reports it (covers vendored sources).
fn metadata_package(version: &str) -> Option<PathBuf> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest_dir = env::var_os("CARGO_MANIFEST_DIR")?;
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--locked"])
        .current_dir(manifest_dir)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    metadata["packages"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == PACKAGE && p["version"] == version)
        .and_then(|p| p["manifest_path"].as_str())
        .and_then(|manifest| Path::new(manifest).parent().map(Path::to_path_buf))
}

/// Accepts `root` if it is a WAMR tree and reads its version.
fn checked(root: PathBuf, origin: String) -> anyhow::Result<Sources> {
    let header = root.join("core/iwasm/include/wasm_export.h");
    if !header.is_file() {
        bail!(
            "{} (from {origin}) is not a WAMR source tree: {} is missing",
            root.display(),
            header.display()
        );
    }
    let version_h = root.join("core/version.h");
    let text = fs::read_to_string(&version_h)
        .with_context(|| format!("reading {}", version_h.display()))?;
    let part = |name: &str| -> anyhow::Result<u32> {
        let define = format!("#define WAMR_VERSION_{name} ");
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix(&define))
            .with_context(|| format!("{} defines no WAMR_VERSION_{name}", version_h.display()))?;
        line.trim()
            .parse()
            .with_context(|| format!("WAMR_VERSION_{name} in {}", version_h.display()))
    };
    let version = format!("{}.{}.{}", part("MAJOR")?, part("MINOR")?, part("PATCH")?);
    Ok(Sources {
        root,
        version,
        origin,
    })
}

//! The on-disk cache of portable modules compiled at /init, keyed by the module's SHA-256 and
//! everything the compiled code depends on (wasmer version, target, CPU features, profile), so
//! the next container with the same code deserializes instead of running LLVM again.
//! The cache directory belongs to the operator: files in it are loaded as trusted native code.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::Context;
use wasm_artifact::RuntimeId;
use wasmer::{Engine, Module};

pub struct ModuleCache {
    dir: PathBuf,
    engine_key: String,
}

/// Where a prepared module came from, for logs.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Compiled,
    Cache,
}

impl ModuleCache {
    pub fn new(root: &Path) -> anyhow::Result<Self> {
        let dir = root.join("wasmer");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating cache directory {}", dir.display()))?;
        restrict_to_owner(&dir)?;
        let target = wasmer_profile::host_target();
        let mut hasher = DefaultHasher::new();
        RuntimeId::Wasmer.locked_version().hash(&mut hasher);
        target.triple().to_string().hash(&mut hasher);
        format!("{:?}", target.cpu_features()).hash(&mut hasher);
        format!("{:?}", wasmer_profile::features()).hash(&mut hasher);
        Ok(ModuleCache {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
        })
    }

    /// The compiled module for `wasm`: from the cache when present and loadable, else compiled
    /// now and written to the cache (atomically, so readers never see half a file).
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        sha256: &str,
    ) -> anyhow::Result<(Module, Source)> {
        let path = self
            .dir
            .join(format!("{sha256}-{}.wasmer", self.engine_key));
        if path.exists() {
            // SAFETY: the file was written by this cache from a module this engine compiled;
            // the directory is private to the executor's user and the key names the engine.
            match unsafe { Module::deserialize_from_file(engine, &path) } {
                Ok(module) => return Ok((module, Source::Cache)),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "dropping unusable cache entry");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let module = Module::new(engine, wasm)?;
        if let Err(error) = self.store(&path, &module) {
            tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "could not cache compiled module");
        }
        Ok((module, Source::Compiled))
    }

    fn store(&self, path: &Path, module: &Module) -> anyhow::Result<()> {
        static UNIQUE: AtomicU64 = AtomicU64::new(0);
        let bytes = module.serialize().context("serializing module")?;
        let tmp = path.with_extension(format!(
            "tmp-{}-{}",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("renaming into {}", path.display()))
    }
}

fn restrict_to_owner(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", dir.display()))
}

//! The on-disk cache of compiled portable modules, keyed by the module's SHA-256 and the
//! engine's compatibility hash, so a second container with the same code skips compiling.
//! The cache directory belongs to the operator: files in it are loaded as trusted native code.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::Context;
use wasmtime::{Engine, Module};

pub struct ModuleCache {
    dir: PathBuf,
    engine_key: String,
}

/// Where a prepared module came from, for logs and metrics.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Compiled,
    Cache,
}

impl ModuleCache {
    pub fn new(engine: &Engine, root: &Path) -> anyhow::Result<Self> {
        let dir = root.join("wasmtime");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating cache directory {}", dir.display()))?;
        restrict_to_owner(&dir)?;
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(ModuleCache {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
        })
    }

    /// The compiled module for `wasm`: from the cache when present and loadable, else
    /// compiled now and written to the cache (atomically, so readers never see half a file).
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        sha256: &str,
    ) -> anyhow::Result<(Module, Source)> {
        let path = self.dir.join(format!("{sha256}-{}.cwasm", self.engine_key));
        if path.exists() {
            // SAFETY: the file was written by this cache from a module this engine compiled;
            // the directory is private to the executor's user.
            match unsafe { Module::deserialize_file(engine, &path) } {
                Ok(module) => return Ok((module, Source::Cache)),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "dropping unusable cache entry");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let module = Module::new(engine, wasm).map_err(anyhow::Error::from)?;
        if let Err(error) = self.store(&path, &module) {
            tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "could not cache compiled module");
        }
        Ok((module, Source::Compiled))
    }

    fn store(&self, path: &Path, module: &Module) -> anyhow::Result<()> {
        static UNIQUE: AtomicU64 = AtomicU64::new(0);
        let bytes = module
            .serialize()
            .map_err(anyhow::Error::from)
            .context("serializing module")?;
        let tmp = path.with_extension(format!(
            "tmp-{}-{}",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("renaming into {}", path.display()))
    }
}

fn restrict_to_owner(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", dir.display()))
}

//! The on-disk cache of compiled portable modules, shared by the backends: entries are keyed by
//! the module's SHA-256 and a hash of everything the compiled code depends on (runtime version,
//! engine settings, CPU), so the next container with the same code skips compiling. The cache
//! directory belongs to the operator: files in it are loaded as trusted native code.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::Context;

pub struct DiskCache {
    dir: PathBuf,
    engine_key: String,
}

/// Where a prepared module came from, for logs.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Compiled,
    Cache,
}

impl DiskCache {
    /// A cache in `root/<runtime>`, private to the executor's user; `engine_key` is hashed into
    /// every entry's name so code compiled under other settings is never picked up.
    pub fn new(root: &Path, runtime: &str, engine_key: impl Hash) -> anyhow::Result<Self> {
        let dir = root.join(runtime);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating cache directory {}", dir.display()))?;
        restrict_to_owner(&dir)?;
        let mut hasher = DefaultHasher::new();
        engine_key.hash(&mut hasher);
        Ok(DiskCache {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
        })
    }

    /// The compiled module for the portable module `sha256`: `load`ed from the cache when an
    /// entry exists and loads (an unusable entry is dropped), else `compile`d and written to
    /// the cache with `serialize` (atomically, so readers never see half a file). Errors of
    /// `compile` are the caller's; failing to write the cache only costs the next init.
    pub fn load_or_compile<M>(
        &self,
        sha256: &str,
        load: impl FnOnce(&Path) -> anyhow::Result<M>,
        compile: impl FnOnce() -> anyhow::Result<M>,
        serialize: impl FnOnce(&M) -> anyhow::Result<Vec<u8>>,
    ) -> anyhow::Result<(M, Source)> {
        let path = self.dir.join(format!("{sha256}-{}.bin", self.engine_key));
        if path.exists() {
            match load(&path) {
                Ok(module) => return Ok((module, Source::Cache)),
                Err(error) => {
                    tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "dropping unusable cache entry");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let module = compile()?;
        if let Err(error) = serialize(&module).and_then(|bytes| store(&path, &bytes)) {
            tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "could not cache compiled module");
        }
        Ok((module, Source::Compiled))
    }
}

fn store(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_extension(format!(
        "tmp-{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming into {}", path.display()))
}

fn restrict_to_owner(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_once_then_loads() {
        let root = std::env::temp_dir().join(format!("disk-cache-{}", std::process::id()));
        let cache = DiskCache::new(&root, "test", "settings").unwrap();
        let compile = || Ok(b"native".to_vec());
        let serialize = |m: &Vec<u8>| Ok(m.clone());
        let load = |p: &Path| Ok(std::fs::read(p)?);
        let (first, source) = cache
            .load_or_compile("abc", load, compile, serialize)
            .unwrap();
        assert!(matches!(source, Source::Compiled));
        let (second, source) = cache
            .load_or_compile("abc", load, || anyhow::bail!("must not compile"), serialize)
            .unwrap();
        assert!(matches!(source, Source::Cache));
        assert_eq!(first, second);
        // An entry that does not load is replaced by a fresh compile.
        let (_, source) = cache
            .load_or_compile("abc", |_| anyhow::bail!("corrupt"), compile, serialize)
            .unwrap();
        assert!(matches!(source, Source::Compiled));
        std::fs::remove_dir_all(root).unwrap();
    }
}

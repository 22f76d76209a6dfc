//! The on-disk cache of compiled portable modules, shared by the compiling backends: entries
//! are keyed by the module's SHA-256 and a hash of everything the compiled code depends on
//! (runtime version, engine settings, CPU), so the next container with the same code skips
//! compiling.
//!
//! An entry is native code the executor will run, so nothing in the directory is trusted by
//! its location alone: every entry carries an HMAC-SHA256 of its name and contents under a key
//! created at random with the cache (`key`, mode 0600), and is loaded only when it is a regular
//! file (never through a link), owned by the executor's user, writable by nobody else, and its
//! MAC verifies. The cache is bounded: past `max_bytes` the least recently used entries go.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    io::{Read, Write},
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::{Context, bail};
use hmac::{Hmac, Mac};
use rustix::fs::{Mode, OFlags};
use sha2::Sha256;

/// First bytes of every entry.
const MAGIC: &[u8; 8] = b"OWCACHE1";
const MAC_LEN: usize = 32;
const KEY_LEN: usize = 32;
/// The key file, in the cache's root directory.
const KEY_FILE: &str = "key";
/// Entries end in `.bin`; a compile in progress holds `.lock` beside its entry.
const ENTRY_EXTENSION: &str = "bin";
const LOCK_EXTENSION: &str = "lock";

pub struct DiskCache {
    dir: PathBuf,
    engine_key: String,
    mac_key: [u8; KEY_LEN],
    max_bytes: u64,
}

/// Where a prepared module came from, for logs.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Compiled,
    Cache,
}

impl DiskCache {
    /// The cache of `runtime` in `root/<runtime>` (`root` is a private directory, see
    /// `state::private_dir`); `engine_key` is hashed into every entry's name so code compiled
    /// under other settings is never picked up.
    pub fn new(
        root: &Path,
        runtime: &str,
        engine_key: impl Hash,
        max_bytes: u64,
    ) -> anyhow::Result<Self> {
        let mac_key = load_or_create_key(&root.join(KEY_FILE))?;
        let dir = crate::state::private_dir(&root.join(runtime))?;
        let mut hasher = DefaultHasher::new();
        engine_key.hash(&mut hasher);
        Ok(DiskCache {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
            mac_key,
            max_bytes,
        })
    }

    /// The compiled module for the portable module `sha256`: `load`ed from a verified cache
    /// entry when there is one (an entry that fails a check or does not load is dropped), else
    /// `compile`d and stored with `serialize`. Errors of `compile` are the caller's; failing to
    /// write the cache only costs the next init.
    ///
    /// One compile of a module at a time over this directory: a thread or executor process that
    /// finds another compiling the same module waits for it and loads what it stored (a language
    /// engine compiled with LLVM takes a minute and more; several executors starting together
    /// would each compile it).
    pub fn load_or_compile<M>(
        &self,
        sha256: &str,
        load: impl Fn(&[u8]) -> anyhow::Result<M>,
        compile: impl FnOnce() -> anyhow::Result<M>,
        serialize: impl FnOnce(&M) -> anyhow::Result<Vec<u8>>,
    ) -> anyhow::Result<(M, Source)> {
        if let Some(module) = self.load(sha256, &load) {
            return Ok((module, Source::Cache));
        }
        let compiling = self.compile_lock(sha256);
        if let Some(module) = self.load(sha256, &load) {
            return Ok((module, Source::Cache));
        }
        let compiled = compile();
        if let Ok(module) = &compiled {
            self.store_with(sha256, || serialize(module));
        }
        if let Some((path, _lock)) = compiling {
            // Removed while still held: a waiter locks the removed file and then finds the
            // entry; a later compile of the module starts from a new lock file.
            let _ = std::fs::remove_file(path);
        }
        Ok((compiled?, Source::Compiled))
    }

    /// The lock on compiling `sha256` into this cache, held until dropped, and its file; none
    /// when the lock file cannot be opened or locked (then two compiles of the module may run at
    /// once, which only costs time).
    fn compile_lock(&self, sha256: &str) -> Option<(PathBuf, std::fs::File)> {
        let (entry, _) = self.entry(sha256);
        let path = entry.with_extension(LOCK_EXTENSION);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::open(&path, flags, Mode::from_raw_mode(0o600)).ok()?;
        rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive).ok()?;
        Some((path, std::fs::File::from(fd)))
    }

    /// What the entry for `sha256` `load`s to, when there is a verified entry that loads (one
    /// that fails a check or does not load is dropped).
    pub fn load<M>(
        &self,
        sha256: &str,
        load: impl FnOnce(&[u8]) -> anyhow::Result<M>,
    ) -> Option<M> {
        let (path, name) = self.entry(sha256);
        match self.read_verified(&path, &name) {
            Ok(Some(payload)) => match load(&payload) {
                Ok(module) => return Some(module),
                Err(error) => self.drop_entry(&path, &error),
            },
            Ok(None) => {}
            Err(error) => self.drop_entry(&path, &error),
        }
        None
    }

    /// Stores what `serialize` makes as the entry for `sha256`; a failure is logged (it only
    /// costs the next load).
    pub fn store_with(&self, sha256: &str, serialize: impl FnOnce() -> anyhow::Result<Vec<u8>>) {
        let (path, name) = self.entry(sha256);
        if let Err(error) = serialize().and_then(|bytes| self.store(&path, &name, &bytes)) {
            tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "could not write a cache entry");
        }
    }

    fn entry(&self, sha256: &str) -> (PathBuf, String) {
        let name = format!("{sha256}-{}.{ENTRY_EXTENSION}", self.engine_key);
        (self.dir.join(&name), name)
    }

    /// The payload of the entry at `path` if there is one and every check passes; `Ok(None)`
    /// when there is none.
    fn read_verified(&self, path: &Path, name: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => bail!("cannot open the entry without following links: {e}"),
        };
        let mut file = std::fs::File::from(fd);
        let meta = file.metadata()?;
        check_owned_file(&meta, 0o022)?;
        if meta.len() > self.max_bytes || meta.len() < (MAGIC.len() + MAC_LEN) as u64 {
            bail!("an entry of {} bytes cannot be one of ours", meta.len());
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)?;
        let Some(rest) = bytes.strip_prefix(MAGIC) else {
            bail!("not a cache entry");
        };
        let (tag, payload) = rest.split_at(MAC_LEN);
        self.mac(name, payload).verify_slice(tag).map_err(|_| {
            anyhow::anyhow!("the entry's MAC does not verify: not written by this cache")
        })?;
        // Used now: the least recently used entries are evicted first.
        let _ = rustix::fs::futimens(&file, &now_timestamps());
        Ok(Some(payload.to_vec()))
    }

    fn mac(&self, name: &str, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.mac_key).expect("HMAC takes any key length");
        mac.update(name.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac
    }

    fn drop_entry(&self, path: &Path, error: &anyhow::Error) {
        tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "dropping unusable cache entry");
        let _ = std::fs::remove_file(path);
    }

    /// Writes the entry atomically (readers never see half a file), then evicts past the bound.
    fn store(&self, path: &Path, name: &str, payload: &[u8]) -> anyhow::Result<()> {
        let size = (MAGIC.len() + MAC_LEN + payload.len()) as u64;
        if size > self.max_bytes {
            bail!("the compiled module ({size} bytes) is larger than the whole cache may be");
        }
        let (tmp, mut file) = new_file_beside(path, "tmp")?;
        let tag = self.mac(name, payload).finalize().into_bytes();
        let written = file
            .write_all(MAGIC)
            .and_then(|()| file.write_all(&tag))
            .and_then(|()| file.write_all(payload));
        drop(file);
        if let Err(error) = written.map_err(anyhow::Error::from).and_then(|()| {
            std::fs::rename(&tmp, path).with_context(|| format!("renaming into {}", path.display()))
        }) {
            let _ = std::fs::remove_file(&tmp);
            return Err(error);
        }
        self.evict();
        Ok(())
    }

    /// Removes the least recently used entries until the cache fits its bound (files being
    /// written or locks are not entries).
    fn evict(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == ENTRY_EXTENSION))
            .filter_map(|e| {
                let meta = e.metadata().ok().filter(|m| m.is_file())?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.max_bytes {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                tracing::info!(path = %path.display(), bytes = len, "evicted from the cache");
                total -= len;
            }
        }
    }
}

/// The cache's MAC key: created at random (mode 0600) the first time, else read and checked.
/// A new key is written in full under a name of its own and then linked into place, so an
/// executor that starts at the same moment on the same cache never reads half a key: it reads
/// the key that was linked first.
fn load_or_create_key(path: &Path) -> anyhow::Result<[u8; KEY_LEN]> {
    if std::fs::symlink_metadata(path).is_err() {
        create_key(path)?;
    }
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("opening {} (it must not be a link)", path.display()))?;
    let mut file = std::fs::File::from(fd);
    check_owned_file(&file.metadata()?, 0o077)
        .with_context(|| format!("the cache key {}", path.display()))?;
    let mut key = [0u8; KEY_LEN];
    file.read_exact(&mut key)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(key)
}

/// A new file (mode 0600, never through a link) beside `path`, under a name no other thread or
/// process uses (`label`, this process, a counter), to be renamed or linked into place.
fn new_file_beside(path: &Path, label: &str) -> anyhow::Result<(PathBuf, std::fs::File)> {
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    let name = path.with_extension(format!(
        "{label}-{}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    ));
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(&name, flags, Mode::from_raw_mode(0o600))
        .with_context(|| format!("creating {}", name.display()))?;
    Ok((name, std::fs::File::from(fd)))
}

/// Writes a random key beside `path` and links it to `path` unless a key is there already.
fn create_key(path: &Path) -> anyhow::Result<()> {
    let (tmp, mut file) = new_file_beside(path, "new")?;
    let mut key = [0u8; KEY_LEN];
    let linked = getrandom::getrandom(&mut key)
        .context("drawing the cache key")
        .and_then(|()| {
            file.write_all(&key)
                .with_context(|| format!("writing {}", tmp.display()))
        })
        .and_then(|()| match std::fs::hard_link(&tmp, path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                Err(e).with_context(|| format!("linking {}", path.display()))
            }
            _ => Ok(()),
        });
    let _ = std::fs::remove_file(&tmp);
    linked
}

/// A regular file of this user without any of the permission bits in `forbidden`.
fn check_owned_file(meta: &std::fs::Metadata, forbidden: u32) -> anyhow::Result<()> {
    let me = rustix::process::geteuid().as_raw();
    if !meta.is_file() {
        bail!("not a regular file");
    }
    if meta.uid() != me {
        bail!(
            "owned by user {}, not by the executor's user {me}",
            meta.uid()
        );
    }
    if meta.mode() & forbidden != 0 {
        bail!("mode {:o} is open to other users", meta.mode() & 0o777);
    }
    Ok(())
}

fn now_timestamps() -> rustix::fs::Timestamps {
    let now = rustix::fs::Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_NOW,
    };
    rustix::fs::Timestamps {
        last_access: now,
        last_modification: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("disk-cache-{label}-{}", std::process::id()));
        crate::state::private_dir(&root).unwrap()
    }

    #[test]
    fn compiles_once_then_loads() {
        let root = scratch("once");
        let cache = DiskCache::new(&root, "test", "settings", 1 << 20).unwrap();
        let compile = || Ok(b"native".to_vec());
        let serialize = |m: &Vec<u8>| Ok(m.clone());
        let load = |p: &[u8]| Ok(p.to_vec());
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
        // Another cache over the same directory shares its key, and so its entries.
        let again = DiskCache::new(&root, "test", "settings", 1 << 20).unwrap();
        let (_, source) = again
            .load_or_compile("abc", load, || anyhow::bail!("must not compile"), serialize)
            .unwrap();
        assert!(matches!(source, Source::Cache));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn caches_opened_at_the_same_moment_share_one_key() {
        let root = scratch("race");
        let caches: Vec<DiskCache> = std::thread::scope(|scope| {
            let opening: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| DiskCache::new(&root, "test", "settings", 1 << 20)))
                .collect();
            opening
                .into_iter()
                .map(|t| t.join().unwrap().unwrap())
                .collect()
        });
        assert!(caches.iter().all(|c| c.mac_key == caches[0].mac_key));
        let names: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names.len(),
            2,
            "the key and the runtime's directory: {names:?}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_module_compiled_at_the_same_moment_twice_is_compiled_once() {
        let root = scratch("compile-once");
        let compiles = AtomicU64::new(0);
        let sources: Vec<Source> = std::thread::scope(|scope| {
            let compiling: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let cache = DiskCache::new(&root, "test", "settings", 1 << 20).unwrap();
                        let compile = || {
                            compiles.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(std::time::Duration::from_millis(200));
                            Ok(b"native".to_vec())
                        };
                        let (module, source) = cache
                            .load_or_compile("abc", |p| Ok(p.to_vec()), compile, |m| Ok(m.clone()))
                            .unwrap();
                        assert_eq!(module, b"native");
                        source
                    })
                })
                .collect();
            compiling.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_eq!(compiles.load(Ordering::Relaxed), 1, "{sources:?}");
        let left: Vec<_> = std::fs::read_dir(root.join("test"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "the entry and no lock: {left:?}");
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn planted_or_patched_entries_are_never_loaded() {
        let root = scratch("planted");
        let cache = DiskCache::new(&root, "test", "settings", 1 << 20).unwrap();
        let serialize = |m: &Vec<u8>| Ok(m.clone());
        let loaded_from_cache = |cache: &DiskCache| {
            let (module, source) = cache
                .load_or_compile(
                    "abc",
                    |p| Ok(p.to_vec()),
                    || Ok(b"compiled".to_vec()),
                    serialize,
                )
                .unwrap();
            (matches!(source, Source::Cache), module)
        };
        // The first load compiles and writes the entry.
        assert!(!loaded_from_cache(&cache).0);
        let entry = std::fs::read_dir(root.join("test"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        // Patched: one byte of the code changed.
        let mut bytes = std::fs::read(&entry).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&entry, &bytes).unwrap();
        assert_eq!(loaded_from_cache(&cache), (false, b"compiled".to_vec()));
        // Planted: a file written by someone without the key.
        let mut forged = MAGIC.to_vec();
        forged.extend_from_slice(&[0u8; MAC_LEN]);
        forged.extend_from_slice(b"evil");
        std::fs::write(&entry, &forged).unwrap();
        assert_eq!(loaded_from_cache(&cache), (false, b"compiled".to_vec()));
        // A link to a valid entry elsewhere.
        let elsewhere = root.join("elsewhere.bin");
        std::fs::rename(&entry, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &entry).unwrap();
        assert_eq!(loaded_from_cache(&cache), (false, b"compiled".to_vec()));
        // Writable by others.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(loaded_from_cache(&cache), (false, b"compiled".to_vec()));
        assert_eq!(loaded_from_cache(&cache), (true, b"compiled".to_vec()));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn the_least_recently_used_entries_are_evicted() {
        let root = scratch("evict");
        let entry_bytes = (MAGIC.len() + MAC_LEN + 1000) as u64;
        let cache = DiskCache::new(&root, "test", "settings", 3 * entry_bytes).unwrap();
        let put = |name: &str| {
            cache
                .load_or_compile(
                    name,
                    |p| Ok(p.to_vec()),
                    || Ok(vec![7u8; 1000]),
                    |m| Ok(m.clone()),
                )
                .unwrap()
                .1
        };
        for name in ["a", "b", "c"] {
            put(name);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(matches!(put("a"), Source::Cache), "a is used again");
        std::thread::sleep(std::time::Duration::from_millis(20));
        put("d");
        assert!(matches!(put("a"), Source::Cache), "recently used: kept");
        assert!(
            matches!(put("b"), Source::Compiled),
            "least recently used: evicted"
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}

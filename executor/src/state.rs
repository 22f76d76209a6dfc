//! The executor's own directories: the state directory (by default `/var/lib/wasm-executor` for
//! root, else `$XDG_STATE_HOME/wasm-executor`), the compiled-module cache and the root under
//! which actions are granted directories. They are private to the executor's user, and the
//! grant root never overlaps the cache: what an action can write must never be loaded as code.

use std::{
    os::unix::fs::{DirBuilderExt, MetadataExt},
    path::{Path, PathBuf},
};

use anyhow::{Context, bail};

use crate::config::Config;

/// The default state directory for this user.
pub fn default_state_dir() -> PathBuf {
    if rustix::process::geteuid().is_root() {
        return PathBuf::from("/var/lib/wasm-executor");
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("wasm-executor")
}

/// Creates `dir` (and its parents) if absent, with mode 0700. An existing directory must belong
/// to this user and be writable by nobody else; it is never changed (it may be the operator's
/// on purpose). Returns its canonical path.
pub fn private_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let meta =
        std::fs::symlink_metadata(dir).with_context(|| format!("inspecting {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        bail!(
            "{} belongs to user {}, not to the executor's user {me}",
            dir.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o022 != 0 {
        bail!(
            "{} is writable by other users (mode {:o}): they could plant files the executor trusts \
             or reads on an action's behalf; use a directory only the executor's user can write",
            dir.display(),
            meta.mode() & 0o7777
        );
    }
    dir.canonicalize()
        .with_context(|| format!("resolving {}", dir.display()))
}

/// Refuses a grant root that an action could use to reach what the executor trusts: one that
/// contains any of `own` (the cache, the state directory, key and token files) or lies inside
/// the cache.
pub fn check_grant_root(
    grant_root: &Path,
    cache: &Path,
    own: &[(&str, &Path)],
) -> anyhow::Result<()> {
    let overlap = |what: &str, path: &Path| {
        anyhow::anyhow!(
            "the directory root {} overlaps the {what} {}: actions could read or write what the executor trusts; \
             keep them apart (--dir-root, --cache-dir, --state-dir)",
            grant_root.display(),
            path.display()
        )
    };
    if grant_root.starts_with(cache) {
        return Err(overlap("cache", cache));
    }
    for (what, path) in std::iter::once(&("cache", cache)).chain(own) {
        if path.starts_with(grant_root) {
            return Err(overlap(what, path));
        }
    }
    Ok(())
}

/// The executor's directories, resolved, created private and checked to be apart.
pub struct Directories {
    pub state: PathBuf,
    pub cache: PathBuf,
    pub grant_root: PathBuf,
}

impl Directories {
    pub fn of(config: &Config) -> anyhow::Result<Self> {
        let state = private_dir(&config.state_dir.clone().unwrap_or_else(default_state_dir))?;
        let cache = private_dir(
            &config
                .cache_dir
                .clone()
                .unwrap_or_else(|| state.join("cache")),
        )?;
        let grant_root = private_dir(
            &config
                .dir_root
                .clone()
                .unwrap_or_else(|| state.join("grants")),
        )?;
        let mut own: Vec<(&str, PathBuf)> = vec![("state directory", state.clone())];
        for key in &config.trusted_keys {
            own.push(("trusted key", absolute(key)));
        }
        if let Some(token) = &config.auth_token_file {
            own.push(("token file", absolute(token)));
        }
        let own: Vec<(&str, &Path)> = own.iter().map(|(w, p)| (*w, p.as_path())).collect();
        check_grant_root(&grant_root, &cache, &own)?;
        Ok(Directories {
            state,
            cache,
            grant_root,
        })
    }
}

/// `path` made absolute and resolved as far as it exists (so a link cannot hide where it is).
fn absolute(path: &Path) -> PathBuf {
    path.canonicalize()
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn private_dirs_are_created_0700_and_overlaps_refused() {
        let base = std::env::temp_dir().join(format!("state-{}", std::process::id()));
        let cache = private_dir(&base.join("cache")).unwrap();
        assert_eq!(std::fs::metadata(&cache).unwrap().mode() & 0o777, 0o700);
        assert_eq!(
            private_dir(&cache).unwrap(),
            cache,
            "an existing private one is fine"
        );
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let error = private_dir(&cache).unwrap_err().to_string();
        assert!(error.contains("writable by other users"), "{error}");
        assert_eq!(
            std::fs::metadata(&cache).unwrap().mode() & 0o7777,
            0o1777,
            "an operator's directory is never changed"
        );
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
        let grants = private_dir(&base.join("grants")).unwrap();
        let token = base.join("token");
        check_grant_root(
            &grants,
            &cache,
            &[("state directory", &base), ("token", &token)],
        )
        .unwrap();
        assert!(
            check_grant_root(&base, &cache, &[]).is_err(),
            "root above the cache"
        );
        assert!(
            check_grant_root(&cache.join("x"), &cache, &[]).is_err(),
            "root inside it"
        );
        let err = check_grant_root(&grants, &cache, &[("token", &grants.join("t"))]).unwrap_err();
        assert!(err.to_string().contains("token"), "{err}");
        std::fs::remove_dir_all(&base).unwrap();
    }
}

//! The `dir` capability: a directory of the action's namespace. Every grant belongs to one
//! namespace: the annotation names a path as the guest sees it, and the directory granted is that
//! path beneath the namespace's own directory under the grant root (`ROOT/<namespace>/<path>`), so
//! no spelling of a path reaches another namespace's files. The directory is opened once, at /init,
//! one path component at a time without following any symlink (missing components are created, mode
//! 0700), and every run of the container gets that open directory. Replacing the path afterwards
//! (by a symlink, a rename) changes nothing for the container: it keeps the directory it was
//! granted.

use std::{
    os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd},
    path::{Component, Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use futures_util::{FutureExt, future::BoxFuture};
use rustix::{
    fs::{Mode, OFlags},
    io::Errno,
};
use serde_json::Value;

use super::{Capability, CapabilityId, Descriptor, Grant, GrantError, Granted};
use crate::namespace_volumes::Volumes;

pub static DESCRIPTOR: Descriptor = Descriptor {
    id: CapabilityId::Dir,
    annotation: "dir",
    namespaces_option: "--dir-namespaces",
    // Through WASI's preopened directories, which every module may import.
    imports: &[],
};

/// Grants directories beneath the grant root, on each namespace's volume.
pub struct DirCapability {
    pub root: GrantRoot,
    /// The filesystem of each namespace's grants, sized by its quota.
    pub volumes: Volumes,
}

impl Capability for DirCapability {
    fn descriptor(&self) -> &'static Descriptor {
        &DESCRIPTOR
    }

    fn asks(&self, value: &Value) -> Result<bool, String> {
        match value {
            Value::Null => Ok(false),
            Value::String(_) => Ok(true),
            other => Err(format!(
                "the `dir` annotation must be a path such as \"/data\", not {other}"
            )),
        }
    }

    fn grant<'a>(
        &'a self,
        namespace: Option<&'a str>,
        value: &'a Value,
    ) -> BoxFuture<'a, Result<Granted, GrantError>> {
        async move {
            let requested = value.as_str().unwrap_or_default();
            let Some(namespace) = namespace else {
                return Err(GrantError::Refused(
                    "the `dir` annotation needs the action's namespace, which the invoker \
                     sends as `namespace` in the /init value (the OpenWhisk patch does); none was sent"
                        .into(),
                ));
            };
            check_namespace(namespace)?;
            self.volumes
                .prepare(namespace)
                .await
                .map_err(GrantError::Unavailable)?;
            let granted = self.root.grant(namespace, requested)?;
            Ok(Arc::new(granted) as Granted)
        }
        .boxed()
    }
}

impl Grant for GrantedDir {
    const ID: CapabilityId = CapabilityId::Dir;
}

/// The tree under which directories are granted, held open.
#[derive(Debug)]
pub struct GrantRoot {
    fd: OwnedFd,
}

/// A granted directory: open, and the path at which the guest sees it.
#[derive(Debug)]
pub struct GrantedDir {
    fd: OwnedFd,
    guest_path: String,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Checks a namespace name as OpenWhisk's `EntityName` does: 1 to 256 characters of
/// `A-Z a-z 0-9 _ @`, and inside also space, `.` and `-` (never first, space never last). So a
/// namespace is always one path component, never `.`, `..` or empty.
pub fn check_namespace(namespace: &str) -> Result<(), String> {
    let bytes = namespace.as_bytes();
    let word = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'@');
    let ok = match bytes {
        [] => false,
        [only] => word(only),
        [first, middle @ .., last] => {
            word(first)
                && middle
                    .iter()
                    .all(|b| word(b) || matches!(b, b' ' | b'.' | b'-'))
                && (word(last) || matches!(last, b'.' | b'-'))
                && bytes.len() <= 256
        }
    };
    if ok {
        Ok(())
    } else {
        let shown: String = namespace.chars().take(64).collect();
        Err(format!(
            "the namespace {shown:?} is not an OpenWhisk namespace name (1 to 256 characters of \
             A-Z a-z 0-9 _ @, and inside also space . -)"
        ))
    }
}

impl GrantRoot {
    /// Opens the root (a canonical path of a private directory, see `state::private_dir`).
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let fd = rustix::fs::open(path, DIR_FLAGS, Mode::empty())
            .with_context(|| format!("opening the directory root {}", path.display()))?;
        Ok(GrantRoot { fd })
    }

    /// Checks `requested` (the path at which the guest sees the directory) and opens it
    /// beneath `namespace`'s directory, creating what is missing.
    pub fn grant(&self, namespace: &str, requested: &str) -> Result<GrantedDir, String> {
        check_namespace(namespace)?;
        let guest_path = check_guest_path(requested)?;
        let mut current = open_or_create(&self.fd, namespace.as_ref())
            .map_err(|e| format!("cannot open the directory of namespace {namespace:?}: {e}"))?;
        for component in Path::new(&guest_path).components() {
            let Component::Normal(name) = component else {
                continue;
            };
            current = open_or_create(&current, name)
                .map_err(|e| format!("cannot grant {requested:?}: {e}"))?;
        }
        Ok(GrantedDir {
            fd: current,
            guest_path,
        })
    }
}

/// The guest path a `dir` annotation names, normalised (no `.` components, no trailing `/`):
/// absolute, below `/`, without `..`, and without `:` or NUL, which runtimes that map
/// directories by `guest:host` text could misread.
fn check_guest_path(requested: &str) -> Result<String, String> {
    let path = Path::new(requested);
    if !path.is_absolute() {
        return Err(format!(
            "the `dir` annotation must be an absolute path (where the action sees the directory), not {requested:?}"
        ));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!(
            "the `dir` annotation {requested:?} may not contain `..`"
        ));
    }
    if requested.contains([':', '\0']) {
        return Err(format!(
            "the `dir` annotation {requested:?} may not contain `:` or NUL"
        ));
    }
    let names: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    if names.is_empty() {
        return Err(format!(
            "the `dir` annotation {requested:?} names no directory; give one such as /data"
        ));
    }
    Ok(format!("/{}", names.join("/")))
}

/// Opens the directory `name` in `parent` without following a symlink, creating it when absent.
pub fn open_or_create(parent: &OwnedFd, name: &std::ffi::OsStr) -> Result<OwnedFd, String> {
    let shown = name.to_string_lossy();
    let open = || rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty());
    match open() {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT) => {
            match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(format!("cannot create {shown:?}: {e}")),
            }
            open().map_err(|e| describe(&shown, e))
        }
        Err(e) => Err(describe(&shown, e)),
    }
}

fn describe(name: &str, error: Errno) -> String {
    match error {
        Errno::LOOP | Errno::NOTDIR => {
            format!("{name:?} is a symbolic link or not a directory; grants never follow links")
        }
        other => format!("cannot open {name:?}: {other}"),
    }
}

impl GrantedDir {
    /// Where the guest sees the directory.
    pub fn guest_path(&self) -> &str {
        &self.guest_path
    }

    /// A path that opens exactly this directory (`/proc/self/fd/N`), for runtimes that preopen
    /// by path: it names the open directory, not whatever the original path leads to now.
    pub fn reopen_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// The open directory itself.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_lie_beneath_their_namespace_and_never_go_through_links() {
        let base = std::env::temp_dir().join(format!("grant-dir-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let base = base.canonicalize().unwrap();
        let root = GrantRoot::open(&base).unwrap();
        let granted = root.grant("alice", "/a/./b/").unwrap();
        assert_eq!(granted.guest_path(), "/a/b");
        let inside = base.join("alice/a/b");
        assert!(inside.is_dir(), "created beneath the namespace");
        // The same path in another namespace is another directory.
        root.grant("bob", "/a/b").unwrap();
        assert!(base.join("bob/a/b").is_dir());
        // The reopen path leads to the granted directory even after the path is replaced.
        std::fs::rename(&inside, base.join("alice/a/moved")).unwrap();
        std::os::unix::fs::symlink(base.join("bob/a/b"), &inside).unwrap();
        let reopened = std::fs::canonicalize(granted.reopen_path()).unwrap();
        assert_eq!(reopened, base.join("alice/a/moved"));
        // A symlink on the way is refused, wherever it points: also a namespace's own directory.
        let err = root.grant("alice", "/a/b/x").unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        std::os::unix::fs::symlink(base.join("bob"), base.join("carol")).unwrap();
        assert!(
            root.grant("carol", "/a")
                .unwrap_err()
                .contains("symbolic link")
        );
        for bad in ["relative", "/x/../y", "/", "/./", "/a:b", "/a::b", "/a\0b"] {
            assert!(root.grant("alice", bad).is_err(), "{bad:?}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "-a",
            " a",
            "a ",
            "a\0",
            &"a".repeat(257),
        ] {
            assert!(root.grant(bad, "/data").is_err(), "namespace {bad:?}");
        }
        for good in [
            "guest",
            "whisk.system",
            "a b",
            "user@example.com",
            "_",
            "a-",
        ] {
            assert!(check_namespace(good).is_ok(), "{good:?}");
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}

//! The operator's policy for the `dir` annotation. A directory is granted only below the grant
//! root; it is opened once, at /init, one path component at a time without following any
//! symlink (missing components are created, mode 0700), and every run of the container gets
//! that open directory. Replacing the path afterwards (by a symlink, a rename) changes nothing
//! for the container: it keeps the directory it was granted.

use std::{
    os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd},
    path::{Component, Path, PathBuf},
};

use anyhow::Context;
use rustix::{
    fs::{Mode, OFlags},
    io::Errno,
};

/// The tree under which directories are granted, held open.
#[derive(Debug)]
pub struct GrantRoot {
    path: PathBuf,
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

impl GrantRoot {
    /// Opens the root (a canonical path of a private directory, see `state::private_dir`).
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let fd = rustix::fs::open(path, DIR_FLAGS, Mode::empty())
            .with_context(|| format!("opening the directory root {}", path.display()))?;
        Ok(GrantRoot {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// Checks `requested` and opens it beneath the root, creating what is missing.
    pub fn grant(&self, requested: &str) -> Result<GrantedDir, String> {
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Err(format!(
                "the `dir` annotation must be an absolute path, not {requested:?}"
            ));
        }
        if path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(format!(
                "the `dir` annotation {requested:?} may not contain `..`"
            ));
        }
        // The guest sees the directory at this path; runtimes that map directories by
        // `guest::host` text must not be confused by it.
        if requested.contains("::") || requested.contains('\0') {
            return Err(format!(
                "the `dir` annotation {requested:?} may not contain `::` or NUL"
            ));
        }
        let relative = path
            .strip_prefix(&self.path)
            .map_err(|_| self.refusal(requested))?;
        if relative.as_os_str().is_empty() {
            return Err(format!(
                "the `dir` annotation {requested:?} names the directory root itself; grant a directory below it"
            ));
        }
        let mut current =
            rustix::io::dup(&self.fd).map_err(|e| format!("cannot open the root: {e}"))?;
        for component in relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            current = open_or_create(&current, name)
                .map_err(|e| format!("cannot grant {requested:?}: {e}"))?;
        }
        Ok(GrantedDir {
            fd: current,
            guest_path: requested.trim_end_matches('/').to_owned(),
        })
    }

    fn refusal(&self, requested: &str) -> String {
        format!(
            "the `dir` annotation {requested:?} is outside {}, the only tree this executor grants",
            self.path.display()
        )
    }
}

/// Opens the directory `name` in `parent` without following a symlink, creating it when absent.
fn open_or_create(parent: &OwnedFd, name: &std::ffi::OsStr) -> Result<OwnedFd, String> {
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
    #[cfg_attr(
        feature = "wasmer-runtime",
        allow(dead_code, reason = "wasmer's WASI takes the descriptor itself")
    )]
    pub fn reopen_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// The open directory itself.
    #[cfg_attr(
        not(feature = "wasmer-runtime"),
        allow(dead_code, reason = "runtimes that preopen by path use `reopen_path`")
    )]
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_only_below_the_root_and_never_through_links() {
        let base = std::env::temp_dir().join(format!("grant-dir-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let base = base.canonicalize().unwrap();
        let root = GrantRoot::open(&base).unwrap();
        let inside = base.join("a/b");
        let granted = root.grant(inside.to_str().unwrap()).unwrap();
        assert_eq!(granted.guest_path(), inside.to_str().unwrap());
        assert!(inside.is_dir(), "created");
        // The reopen path leads to the granted directory even after the path is replaced.
        std::fs::rename(&inside, base.join("a/moved")).unwrap();
        std::os::unix::fs::symlink("/etc", &inside).unwrap();
        let reopened = std::fs::canonicalize(granted.reopen_path()).unwrap();
        assert_eq!(reopened, base.join("a/moved"));
        // A symlink on the way is refused, wherever it points.
        let err = root.grant(inside.join("x").to_str().unwrap()).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        std::os::unix::fs::symlink(base.join("a"), base.join("inner-link")).unwrap();
        assert!(
            root.grant(base.join("inner-link").to_str().unwrap())
                .is_err()
        );
        for bad in [
            "/etc",
            "relative",
            &format!("{}/../x", base.display()),
            base.to_str().unwrap(),
        ] {
            assert!(root.grant(bad).is_err(), "{bad}");
        }
        assert!(root.grant(&format!("{}/a::b", base.display())).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}

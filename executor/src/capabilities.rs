//! The operator's policy for the `dir` annotation: a directory is granted only below the
//! configured root, after symlinks are resolved, and is created if absent.

use std::path::{Component, Path, PathBuf};

/// Checks and creates the directory an action asked for; returns the host path to preopen.
/// The guest sees it at the path it asked for.
pub fn grant_dir(requested: &str, root: &Path) -> Result<PathBuf, String> {
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
    let root = root.canonicalize().map_err(|e| {
        format!(
            "the operator's directory root {} is unusable: {e}",
            root.display()
        )
    })?;
    if !path.starts_with(&root) {
        return Err(refusal(requested, &root));
    }
    std::fs::create_dir_all(path)
        .map_err(|e| format!("cannot create directory {requested:?}: {e}"))?;
    // A symlink anywhere on the way may point elsewhere: judge the resolved path.
    let resolved = path
        .canonicalize()
        .map_err(|e| format!("cannot resolve directory {requested:?}: {e}"))?;
    if !resolved.starts_with(&root) {
        return Err(refusal(requested, &root));
    }
    Ok(resolved)
}

fn refusal(requested: &str, root: &Path) -> String {
    format!(
        "the `dir` annotation {requested:?} is outside {}, the only tree this executor grants",
        root.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_only_below_the_root() {
        let root = std::env::temp_dir().join(format!("grant-dir-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let inside = root.join("a/b");
        assert_eq!(grant_dir(inside.to_str().unwrap(), &root).unwrap(), inside);
        assert!(grant_dir("/etc", &root).is_err());
        assert!(grant_dir("relative", &root).is_err());
        assert!(grant_dir(&format!("{}/../x", root.display()), &root).is_err());
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        let err = grant_dir(root.join("link").to_str().unwrap(), &root).unwrap_err();
        assert!(err.contains("outside"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}

//! Grants against a hostile tenant and a changing file system: a container keeps the directory
//! it was granted at /init, whatever later happens to the path; links, renames and FIFOs do not
//! lead out of it or hold the executor; the executor's own cache and state are never grantable.

use std::{
    os::unix::fs::symlink,
    path::{Path, PathBuf},
};

use serde_json::{Value, json};

use crate::harness::{BUILD_RUNTIME, Executor, ScratchDir, action};

/// WASI errno values (wasi-libc numbering) a refusal by the sandbox carries.
const ENOTCAPABLE: i64 = 76;
const EPERM: i64 = 63;

/// Starts an executor granting below a fresh root, with `secret` (a file outside every grant).
fn with_root() -> (ScratchDir, Executor) {
    let root = ScratchDir::new("grant-root");
    std::fs::write(root.0.join("secret"), "outside").unwrap();
    let ex = Executor::start_with(&["--dir-root", root.0.to_str().unwrap()]);
    (root, ex)
}

fn grant(ex: &Executor, id: &str, dir: &Path) {
    ex.init_code(
        id,
        &action("hostile"),
        json!({"annotations": {"dir": dir.to_str().unwrap()}}),
    )
    .expect(200);
}

/// Runs file operations in container `id`; their outcomes.
fn fs(ex: &Executor, id: &str, ops: Value) -> Vec<Value> {
    let out = ex.run(id, json!({ "fs": ops })).expect(200).json();
    out["fs"].as_array().unwrap().clone()
}

#[track_caller]
fn refused(outcome: &Value, what: &str) {
    let errno = outcome["errno"]
        .as_i64()
        .unwrap_or_else(|| panic!("{what} must be refused: {outcome}"));
    assert!(
        [ENOTCAPABLE, EPERM].contains(&errno),
        "{what}: refused by the sandbox (ENOTCAPABLE or EPERM), not errno {errno}: {outcome}"
    );
}

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_container_keeps_the_directory_it_was_granted_whatever_happens_to_the_path() {
    let (root, ex) = with_root();
    let granted = root.0.join("tenant");
    grant(&ex, "h", &granted);
    let results = fs(
        &ex,
        "h",
        json!([{"op": "write", "path": p(&granted.join("mine.txt")), "content": "kept"}]),
    );
    assert_eq!(results[0], json!({"ok": true}));

    // Someone replaces the granted path: the directory moves away, a link to the root (absolute,
    // then relative) takes its place.
    let moved: PathBuf = root.0.join("tenant-moved");
    std::fs::rename(&granted, &moved).unwrap();
    for target in [root.0.clone(), PathBuf::from("..")] {
        let _ = std::fs::remove_file(&granted);
        symlink(&target, &granted).unwrap();
        let results = fs(
            &ex,
            "h",
            json!([
                {"op": "list", "path": p(&granted)},
                {"op": "read", "path": p(&granted.join("secret"))},
                {"op": "write", "path": p(&granted.join("new.txt")), "content": "x"},
            ]),
        );
        assert_eq!(
            results[0],
            json!({"ok": ["mine.txt"]}),
            "still its own directory: {target:?}"
        );
        assert!(
            results[1]["ok"].is_null(),
            "the root's secret stays out of reach: {}",
            results[1]
        );
        assert_eq!(results[2], json!({"ok": true}));
        assert!(
            moved.join("new.txt").exists(),
            "written into the granted directory"
        );
        assert!(
            !root.0.join("new.txt").exists(),
            "nothing written where the link points"
        );
        std::fs::remove_file(moved.join("new.txt")).unwrap();
    }
    // A new container asking for the path now is refused: grants never follow links.
    let r = ex.init_code(
        "late",
        &action("hostile"),
        json!({"annotations": {"dir": p(&granted)}}),
    );
    assert!(
        r.expect(502).error().contains("symbolic link"),
        "{}",
        r.text()
    );
    ex.assert_healthy();
}

#[test]
fn links_and_renames_do_not_cross_a_grant() {
    let (root, ex) = with_root();
    let (a, b) = (root.0.join("a"), root.0.join("b"));
    grant(&ex, "a", &a);
    grant(&ex, "b", &b);
    let results = fs(
        &ex,
        "a",
        json!([
            {"op": "write", "path": p(&a.join("x")), "content": "a's"},
            {"op": "link", "from": p(&a.join("../secret")), "to": p(&a.join("stolen"))},
            {"op": "link", "from": "/etc/passwd", "to": p(&a.join("passwd"))},
            {"op": "link", "from": p(&a.join("x")), "to": p(&b.join("x"))},
            {"op": "rename", "from": p(&a.join("x")), "to": p(&b.join("x"))},
            {"op": "rename", "from": p(&a.join("x")), "to": p(&a.join("../b/x"))},
            {"op": "rename", "from": p(&a.join("x")), "to": p(&a.join("../x"))},
            {"op": "mkdir", "path": p(&a.join("../c"))},
            {"op": "list", "path": p(&b)},
        ]),
    );
    assert_eq!(results[0], json!({"ok": true}));
    for (i, what) in [
        (1, "a hard link to a file outside"),
        (2, "a hard link to /etc/passwd"),
        (3, "a hard link into another tenant's grant"),
        (4, "a rename into another tenant's grant"),
        (5, "a rename through .."),
        (6, "a rename to the root"),
        (7, "a directory beside the grant"),
        (8, "listing another tenant's grant"),
    ] {
        refused(&results[i], what);
    }
    let listing: Vec<_> = std::fs::read_dir(&root.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(listing.len(), 3, "only a, b and secret: {listing:?}");
    assert!(a.join("x").exists() && !b.join("x").exists());
    assert_eq!(std::fs::read_dir(&b).unwrap().count(), 0, "b untouched");
    ex.assert_healthy();
}

#[test]
fn a_fifo_in_a_grant_does_not_hold_a_worker_past_the_time_limit() {
    let (root, ex) = with_root();
    let dir = root.0.join("pipes");
    ex.init_code(
        "fifo",
        &action("hostile"),
        json!({"annotations": {"dir": p(&dir)}, "limits": {"timeout": 1000}}),
    )
    .expect(200);
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe"))
        .status()
        .expect("mkfifo (coreutils)");
    assert!(status.success());
    let started = std::time::Instant::now();
    let r = ex.run(
        "fifo",
        json!({"fs": [{"op": "read", "path": p(&dir.join("pipe"))}]}),
    );
    let took = started.elapsed();
    // Either the open fails at once or the activation ends at its limit; never later.
    match r.status {
        200 => assert!(r.json()["fs"][0]["ok"].is_null(), "{}", r.text()),
        502 => assert_eq!(
            r.error(),
            "The action exceeded its time limits of 1000 milliseconds."
        ),
        other => panic!("unexpected {other}: {}", r.text()),
    }
    assert!(
        took <= std::time::Duration::from_millis(1000) + ex.late_margin(),
        "a FIFO held the activation for {took:?}"
    );
    // The worker is free again.
    let listed = fs(&ex, "fifo", json!([{"op": "list", "path": p(&dir)}]));
    assert_eq!(listed[0], json!({"ok": ["pipe"]}));
    ex.assert_healthy();
}

#[test]
fn the_executors_cache_and_state_are_never_grantable() {
    let (root, ex) = with_root();
    // Outside the grant root, so refused like any other path.
    for dir in [ex.cache.clone(), ex.state.0.clone()] {
        let r = ex.init_code(
            "cache",
            &action("hostile"),
            json!({"annotations": {"dir": p(&dir)}}),
        );
        assert!(r.expect(502).error().contains("outside"), "{}", r.text());
    }
    // A grant root that holds the cache, or lies inside it, is refused at start.
    let state = ScratchDir::new("state-overlap");
    for (dir_root, cache) in [
        (state.0.clone(), state.0.join("cache")),
        (state.0.join("cache/grants"), state.0.join("cache")),
    ] {
        let mut refused = Executor::spawn(&[
            "--state-dir",
            state.0.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--dir-root",
            dir_root.to_str().unwrap(),
        ]);
        let status = refused
            .exit_status(std::time::Duration::from_secs(20))
            .expect("refused at start");
        assert!(!status.success());
    }
    drop(root);
}

#[test]
fn a_planted_cache_entry_is_never_loaded() {
    let ex = Executor::start();
    ex.init_action("first", "add");
    let entries: Vec<PathBuf> = walk(&ex.cache)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    if BUILD_RUNTIME == "wamr" {
        // WAMR interprets portable modules: nothing is ever cached, so nothing can be planted.
        assert!(entries.is_empty(), "{entries:?}");
        return;
    }
    assert_eq!(entries.len(), 1, "{entries:?}");
    // Someone without the cache's key writes an entry of the right name and shape.
    let mut forged = b"OWCACHE1".to_vec();
    forged.extend_from_slice(&[0u8; 32]);
    forged.extend_from_slice(b"\x7fELF native code of an attacker");
    std::fs::write(&entries[0], &forged).unwrap();
    let again = Executor::start_with(&["--cache-dir", ex.cache.to_str().unwrap()]);
    again.init_action("second", "add");
    assert_eq!(
        again
            .run("second", json!({"param1": 2, "param2": 3}))
            .expect(200)
            .json(),
        json!({"result": 5})
    );
    assert_ne!(
        std::fs::read(&entries[0]).unwrap(),
        forged,
        "replaced by a fresh compile"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

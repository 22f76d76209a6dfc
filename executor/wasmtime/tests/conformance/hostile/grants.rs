//! Grants against a hostile tenant and a changing file system: a namespace never reaches
//! another's files; a container keeps the directory it was granted at /init, whatever later
//! happens to the path; links, renames and FIFOs do not lead out of it or hold the executor;
//! the executor's own cache and state are never grantable.

use std::{
    os::unix::fs::symlink,
    path::{Path, PathBuf},
};

use serde_json::{Value, json};

use crate::harness::{self, Executor, NAMESPACE, ScratchDir, action, build_health};

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

/// Initialises container `id` of the tests' namespace with the directory `dir` (a guest path).
fn grant(ex: &Executor, id: &str, dir: &Path) {
    grant_in(ex, NAMESPACE, id, dir);
}

fn grant_in(ex: &Executor, namespace: &str, id: &str, dir: &Path) {
    ex.init_code(
        id,
        &action("hostile"),
        harness::granted_in(namespace, dir.to_str().unwrap()),
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

/// Two tenants name the same directory, and every other spelling of the other's: each gets
/// its own, and nothing of alice's is read, listed or overwritten by bob. The /init bodies are
/// as the OpenWhisk patch sends them: OpenWhisk's environment (which names the invoking
/// namespace) and the action's namespace in `namespace`.
#[test]
fn one_namespace_never_reaches_anothers_files() {
    let (root, ex) = with_root();
    let init = |id: &str, namespace: &str, dir: &str| {
        let mut value = harness::granted_in(namespace, dir);
        value["env"] = json!({
            "__OW_NAMESPACE": namespace,
            "__OW_ACTION_NAME": format!("/{namespace}/files"),
        });
        ex.init_code(id, &action("hostile"), value)
    };
    init("alice", "alice", "/shared").expect(200);
    let wrote = fs(
        &ex,
        "alice",
        json!([{"op": "write", "path": "/shared/secret.txt", "content": "alice's"}]),
    );
    assert_eq!(wrote[0], json!({"ok": true}));
    let alices = ex.granted_path(&root, "alice", "/shared/secret.txt");
    assert_eq!(std::fs::read_to_string(&alices).unwrap(), "alice's");

    // bob asks for the same path, its parent, and alice's directory as the host spells it.
    let host_spelling = p(&root.grant_of("alice", "/shared"));
    for (id, dir) in [
        ("bob", "/shared"),
        ("bob-parent", "/"),
        ("bob-host", &host_spelling),
    ] {
        let r = init(id, "bob", dir);
        if r.status != 200 {
            assert_eq!(r.status, 502, "{dir}: {}", r.text());
            continue;
        }
        let results = fs(
            &ex,
            id,
            json!([
                {"op": "read", "path": format!("{dir}/secret.txt")},
                {"op": "read", "path": "/shared/secret.txt"},
                {"op": "read", "path": format!("{dir}/../alice/shared/secret.txt")},
                {"op": "read", "path": format!("{dir}/../../alice/shared/secret.txt")},
                {"op": "list", "path": dir},
                {"op": "write", "path": format!("{dir}/secret.txt"), "content": "bob's"},
            ]),
        );
        for outcome in &results[..4] {
            assert!(outcome["ok"].is_null(), "{dir}: bob read {outcome}");
        }
        assert_eq!(results[4], json!({"ok": []}), "{dir}: bob's own, empty");
        assert_eq!(results[5], json!({"ok": true}), "{dir}: bob writes his own");
    }
    // Other namespaces' names for alice's directory: refused at /init.
    for namespace in ["alice/..", "../alice", "bob/../alice", "alice:bob"] {
        let r = init("spelled", namespace, "/shared");
        assert!(r.expect(502).error().contains("namespace"), "{namespace}");
    }
    // bob's namespace directory replaced by a link to alice's, by someone on the host: refused.
    let bobs = root.0.join("bob");
    std::fs::rename(&bobs, root.0.join("bob-before")).unwrap();
    symlink(root.0.join("alice"), &bobs).unwrap();
    let r = init("bob-link", "bob", "/shared");
    assert!(
        r.expect(502).error().contains("symbolic link"),
        "{}",
        r.text()
    );
    // Inside bob's grant, a link the guest makes to alice's file does not lead there.
    std::fs::remove_file(&bobs).unwrap();
    std::fs::rename(root.0.join("bob-before"), &bobs).unwrap();
    let results = fs(
        &ex,
        "bob",
        json!([
            {"op": "symlink", "target": p(&alices), "path": "/shared/abs"},
            {"op": "read", "path": "/shared/abs"},
            {"op": "symlink", "target": "../../alice/shared/secret.txt", "path": "/shared/rel"},
            {"op": "read", "path": "/shared/rel"},
            {"op": "link", "from": "/shared/../../alice/shared/secret.txt", "to": "/shared/hard"},
            {"op": "rename", "from": "/shared/secret.txt", "to": "/shared/../../alice/shared/secret.txt"},
        ]),
    );
    for (i, outcome) in results
        .iter()
        .enumerate()
        .filter(|(i, _)| *i % 2 == 1 || *i >= 4)
    {
        assert!(outcome["ok"].is_null(), "operation {i}: {outcome}");
    }
    assert_eq!(
        std::fs::read_to_string(&alices).unwrap(),
        "alice's",
        "alice's file is untouched"
    );
    assert_eq!(
        std::fs::read_to_string(ex.granted_path(&root, "bob", "/shared/secret.txt")).unwrap(),
        "bob's"
    );
    ex.assert_healthy();
}

#[test]
fn a_container_keeps_the_directory_it_was_granted_whatever_happens_to_the_path() {
    let (root, ex) = with_root();
    let granted = PathBuf::from("/tenant");
    grant(&ex, "h", &granted);
    let host = ex.granted_path(&root, NAMESPACE, "/tenant");
    let results = fs(
        &ex,
        "h",
        json!([{"op": "write", "path": p(&granted.join("mine.txt")), "content": "kept"}]),
    );
    assert_eq!(results[0], json!({"ok": true}));

    // Someone replaces the granted path: the directory moves away, a link to the root (absolute,
    // then relative) takes its place.
    let moved: PathBuf = ex.granted_path(&root, NAMESPACE, "/tenant-moved");
    std::fs::rename(&host, &moved).unwrap();
    for target in [root.0.clone(), PathBuf::from("..")] {
        let _ = std::fs::remove_file(&host);
        symlink(&target, &host).unwrap();
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
    let r = ex.init_code("late", &action("hostile"), harness::granted(&p(&granted)));
    assert!(
        r.expect(502).error().contains("symbolic link"),
        "{}",
        r.text()
    );
    ex.assert_healthy();
}

/// The granted directory removed from the host after /init: no path is looked up again at a
/// run (on any backend), so the container keeps its own, now empty and unlinked, directory.
#[test]
fn a_container_keeps_its_directory_even_once_it_is_removed() {
    let (root, ex) = with_root();
    grant(&ex, "gone", Path::new("/gone"));
    let host = ex.granted_path(&root, NAMESPACE, "/gone");
    std::fs::write(host.join("before.txt"), "x").unwrap();
    std::fs::remove_dir_all(&host).unwrap();
    // A new directory at the same path is not the container's.
    std::fs::create_dir(&host).unwrap();
    std::fs::write(host.join("planted.txt"), "someone else's").unwrap();
    let results = fs(
        &ex,
        "gone",
        json!([
            {"op": "list", "path": "/gone"},
            {"op": "read", "path": "/gone/planted.txt"},
        ]),
    );
    assert_eq!(results[0], json!({"ok": []}), "its own directory, emptied");
    assert!(results[1]["ok"].is_null(), "{}", results[1]);
    ex.assert_healthy();
}

#[test]
fn links_and_renames_do_not_cross_a_grant() {
    let (root, ex) = with_root();
    let (a, b) = (PathBuf::from("/a"), PathBuf::from("/b"));
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
    let listing: Vec<_> = std::fs::read_dir(ex.seen(&root.0.join(NAMESPACE)))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(listing.len(), 2, "only a and b: {listing:?}");
    let (host_a, host_b) = (
        ex.granted_path(&root, NAMESPACE, "/a"),
        ex.granted_path(&root, NAMESPACE, "/b"),
    );
    assert!(host_a.join("x").exists() && !host_b.join("x").exists());
    assert_eq!(
        std::fs::read_dir(&host_b).unwrap().count(),
        0,
        "b untouched"
    );
    ex.assert_healthy();
}

#[test]
fn a_fifo_in_a_grant_does_not_hold_a_worker_past_the_time_limit() {
    let (root, ex) = with_root();
    let dir = PathBuf::from("/pipes");
    let mut value = harness::granted(&p(&dir));
    value["limits"] = json!({"timeout": 1000});
    ex.init_code("fifo", &action("hostile"), value).expect(200);
    let status = std::process::Command::new("mkfifo")
        .arg(ex.granted_path(&root, NAMESPACE, "/pipes/pipe"))
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
    // Named by an action, the cache's and the state's paths are directories of its namespace:
    // new and empty, beneath the grant root, never the executor's own.
    ex.init_action("first", "add");
    for (id, dir) in [("state", ex.state.0.clone()), ("cache", ex.cache.clone())] {
        grant(&ex, id, &dir);
        let listed = fs(&ex, id, json!([{"op": "list", "path": p(&dir)}]));
        assert_eq!(listed[0], json!({"ok": []}), "{dir:?}");
        assert!(ex.granted_path(&root, NAMESPACE, &p(&dir)).is_dir());
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
    if build_health()["portable_modules"] == "interpreted" {
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

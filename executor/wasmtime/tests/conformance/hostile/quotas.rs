//! Quotas against a tenant that fills its grants: the namespace's filesystem refuses with
//! ENOSPC in the guest, the host's disk holds no more than the image, other namespaces keep
//! writing, and the files survive a restart of the executor.

use std::os::unix::fs::MetadataExt;

use serde_json::{Value, json};

use crate::harness::{self, Executor, ScratchDir, action};

/// WASI errno values (wasi-libc numbering) of a full filesystem or quota.
const ENOSPC: i64 = 51;
const EDQUOT: i64 = 19;

const QUOTA_MB: u64 = 8;
const QUOTA_FILES: u64 = 40;

fn start(root: &ScratchDir) -> Executor {
    Executor::start_with(&[
        "--dir-root",
        root.0.to_str().unwrap(),
        "--dir-quota-mb",
        &QUOTA_MB.to_string(),
        "--dir-quota-files",
        &QUOTA_FILES.to_string(),
    ])
}

fn init(ex: &Executor, namespace: &str) {
    ex.init_code(
        namespace,
        &action("hostile"),
        harness::granted_in(namespace, "/data"),
    )
    .expect(200);
}

fn fill(ex: &Executor, id: &str, files: u64, bytes: u64) -> Value {
    ex.run(
        id,
        json!({"fill": {"dir": "/data", "files": files, "bytes": bytes}}),
    )
    .expect(200)
    .json()
}

#[track_caller]
fn full(outcome: &Value) {
    let errno = outcome["errno"].as_i64();
    assert!(
        errno.is_some_and(|e| [ENOSPC, EDQUOT].contains(&e)),
        "the guest must see ENOSPC or EDQUOT: {outcome}"
    );
}

#[test]
fn a_namespace_fills_its_own_quota_and_no_more() {
    let root = ScratchDir::new("quota-root");
    let ex = start(&root);
    if !harness::quotas_enforceable() {
        // The hardened image has no capability to mount: grants are refused, saying why, as the
        // operator's error (500), not the action's.
        let r = ex.init_code(
            "alice",
            &action("hostile"),
            harness::granted_in("alice", "/data"),
        );
        let error = r.expect(500).error();
        assert!(
            error.contains("quota") && error.contains("--dir-quota-mb 0"),
            "{error}"
        );
        return;
    }
    init(&ex, "alice");
    init(&ex, "bob");

    // Bytes: alice writes 1 MiB files until her filesystem is full.
    let filled = fill(&ex, "alice", 1000, 1 << 20);
    full(&filled);
    let written = filled["bytes"].as_u64().unwrap();
    assert!(
        ((QUOTA_MB << 20) / 2..=QUOTA_MB << 20).contains(&written),
        "alice wrote {written} bytes of her {QUOTA_MB} MiB: {filled}"
    );
    let image = std::fs::metadata(root.0.join(".images/alice.ext4")).unwrap();
    assert_eq!(
        image.len(),
        QUOTA_MB << 20,
        "the image has the quota's size"
    );
    assert!(
        image.blocks() * 512 <= QUOTA_MB << 20,
        "the host's disk holds no more than the image: {} bytes",
        image.blocks() * 512
    );
    assert_eq!(
        std::fs::read_dir(root.0.join("alice")).unwrap().count(),
        0,
        "nothing of alice's lies on the host's filesystem outside her image"
    );

    // bob's filesystem is his own: he writes while alice's is full.
    let out = ex
        .run(
            "bob",
            json!({"fs": [{"op": "write", "path": "/data/b.txt", "content": "bob's"}]}),
        )
        .expect(200)
        .json();
    assert_eq!(out["fs"][0], json!({"ok": true}), "{out}");

    // alice frees a file and can write again.
    let out = ex
        .run(
            "alice",
            json!({"fs": [
                {"op": "remove", "path": "/data/fill-0"},
                {"op": "write", "path": "/data/again.txt", "content": "room again"},
            ]}),
        )
        .expect(200)
        .json();
    assert_eq!(out["fs"], json!([{"ok": true}, {"ok": true}]), "{out}");

    // Files: bob creates empty files until his filesystem has no inode left.
    let counted = fill(&ex, "bob", 10_000, 0);
    full(&counted);
    let files = counted["files"].as_u64().unwrap();
    assert!(
        (QUOTA_FILES - 4..=QUOTA_FILES + 32).contains(&files),
        "bob made {files} files with a quota of {QUOTA_FILES}: {counted}"
    );
    ex.assert_healthy();

    // The files outlive the executor: a new one mounts the same images.
    drop(ex);
    let ex = start(&root);
    init(&ex, "alice");
    let out = ex
        .run(
            "alice",
            json!({"fs": [{"op": "read", "path": "/data/again.txt"}]}),
        )
        .expect(200)
        .json();
    assert_eq!(out["fs"][0], json!({"ok": "room again"}), "{out}");
    assert_eq!(
        std::fs::read_to_string(ex.granted_path(&root, "alice", "/data/again.txt")).unwrap(),
        "room again",
        "the operator reads it through the executor's root"
    );

    // A second executor on the same images would corrupt them: it is refused at start.
    let mut second = Executor::spawn(&[
        "--dir-root",
        root.0.to_str().unwrap(),
        "--dir-quota-mb",
        &QUOTA_MB.to_string(),
    ]);
    let status = second
        .exit_status(std::time::Duration::from_secs(20))
        .expect("refused at start");
    assert!(!status.success());
    ex.assert_healthy();
}

#[test]
fn a_quota_too_small_for_a_filesystem_is_refused_at_start() {
    let mut refused = Executor::spawn(&["--dir-quota-mb", "2"]);
    let status = refused
        .exit_status(std::time::Duration::from_secs(20))
        .expect("refused at start");
    assert!(!status.success());
}

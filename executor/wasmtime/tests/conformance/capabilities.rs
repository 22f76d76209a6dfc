//! Capabilities granted by annotations: `dir` preopens one directory below the operator's
//! root and nothing else; `net_access` provides the HTTP GET import under the operator's policy.

use std::{
    io::{Read, Write},
    net::TcpListener,
};

use serde_json::json;

use crate::harness::{self, Executor, NAMESPACE, ScratchDir, action};

#[test]
fn dir_grants_one_directory_of_the_namespace_and_nothing_else() {
    let root = ScratchDir::new("dir-root");
    let ex = Executor::start_with(&["--dir-root", root.0.to_str().unwrap()]);
    let dir = "/cache";
    let granted = ex.granted_path(&root, NAMESPACE, dir);
    ex.init_code("fs", &action("filesys"), harness::granted(dir))
        .expect(200);
    let out = ex
        .run(
            "fs",
            json!({"dir": dir, "file": "a.txt", "content": "kept"}),
        )
        .expect(200)
        .json();
    assert_eq!(out["read"], "kept");
    assert_eq!(
        std::fs::read_to_string(granted.join("a.txt")).unwrap(),
        "kept",
        "written on the host, beneath the namespace's directory"
    );

    // Every file tried below exists on the host: only the sandbox can refuse it.
    std::fs::write(root.0.join("secret"), "outside").unwrap();
    for path in [
        "/etc/passwd".to_owned(),
        root.0.join("secret").to_string_lossy().into_owned(),
    ] {
        let out = ex.run("fs", json!({"read_path": path})).expect(200).json();
        assert_refused(&out, "read", &path, OUTSIDE_EVERY_PREOPEN);
    }
    for path in [
        format!("{dir}/../secret"),
        format!("{dir}/../../../../etc/passwd"),
    ] {
        let out = ex.run("fs", json!({"read_path": path})).expect(200).json();
        assert_refused(&out, "read", &path, LEAVING_THE_PREOPEN);
    }
    let outside = root.0.join("escaped.txt");
    let out = ex
        .run("fs", json!({"write_path": outside, "content": "x"}))
        .expect(200)
        .json();
    assert_refused(
        &out,
        "write",
        &outside.to_string_lossy(),
        OUTSIDE_EVERY_PREOPEN,
    );
    assert!(!outside.exists(), "nothing was written outside the grant");

    // A symlink inside the granted directory does not lead out of it.
    std::os::unix::fs::symlink("/etc", granted.join("etc-link")).unwrap();
    let path = format!("{dir}/etc-link/passwd");
    let out = ex.run("fs", json!({"read_path": path})).expect(200).json();
    assert_refused(&out, "read", &path, LEAVING_THE_PREOPEN);

    // Without the annotation nothing of the filesystem is visible.
    ex.init_action("nofs", "filesys");
    let path = format!("{dir}/a.txt");
    let out = ex
        .run("nofs", json!({"read_path": path}))
        .expect(200)
        .json();
    assert_refused(&out, "read", &path, OUTSIDE_EVERY_PREOPEN);
}

/// WASI's ENOTCAPABLE (wasi-libc numbering): no capability for the path.
const ENOTCAPABLE: i64 = 76;
/// WASI's EPERM: the operation is not permitted.
const EPERM: i64 = 63;

/// A path no preopened directory covers: wasi-libc itself finds no capability for it, on
/// every backend.
const OUTSIDE_EVERY_PREOPEN: &[i64] = &[ENOTCAPABLE];
/// A path inside the preopened directory whose resolution (`..`, a symlink) would leave it:
/// the runtime refuses, with ENOTCAPABLE (wasmer, WAMR) or EPERM (wasmtime's cap-std).
const LEAVING_THE_PREOPEN: &[i64] = &[ENOTCAPABLE, EPERM];

/// `filesys` reported that the sandbox refused `<what>` of `path` with one of `allowed` (not
/// "not found", which would mean the path was looked up somewhere).
#[track_caller]
fn assert_refused(out: &serde_json::Value, what: &str, path: &str, allowed: &[i64]) {
    assert!(
        out[what].is_null() && out["written"].is_null(),
        "{path} must not be accessible: {out}"
    );
    let errno = out[format!("{what}_errno")]
        .as_i64()
        .unwrap_or_else(|| panic!("{path}: the refusal carries a WASI errno: {out}"));
    assert!(
        allowed.contains(&errno),
        "{path}: refused by the sandbox with WASI errno {allowed:?}, not {errno}: {out}"
    );
}

#[test]
fn dir_annotations_that_name_no_directory_of_a_namespace_are_refused_at_init() {
    let root = ScratchDir::new("dir-root");
    let ex = Executor::start_with(&["--dir-root", root.0.to_str().unwrap()]);
    let filesys = action("filesys");
    for (dir, says) in [
        ("relative/path", "absolute"),
        ("/", "names no directory"),
        ("/a/../../etc", ".."),
        ("/a:b", ":"),
        ("/guest::/etc", ":"),
    ] {
        let r = ex.init_code("fs", &filesys, harness::granted(dir));
        let error = r.expect(502).error();
        assert!(
            error.contains("dir") && error.contains(says),
            "{dir}: {error}"
        );
    }
    // The namespace comes from the invoker: without it there is no grant.
    let r = ex.init_code("fs", &filesys, json!({"annotations": {"dir": "/data"}}));
    let error = r.expect(502).error();
    assert!(
        error.contains("dir") && error.contains("namespace"),
        "{error}"
    );
    // An action's environment does not name it either.
    let r = ex.init_code(
        "fs",
        &filesys,
        json!({"annotations": {"dir": "/data"}, "env": {"__OW_NAMESPACE": "guest"}}),
    );
    assert!(r.expect(502).error().contains("namespace"));
    for namespace in ["..", ".", "a/b", "", " a", "a\u{0}"] {
        let r = ex.init_code("fs", &filesys, harness::granted_in(namespace, "/data"));
        assert!(
            r.expect(502).error().contains("namespace"),
            "{namespace:?}: {}",
            r.text()
        );
    }
    // Any absolute path is the namespace's own: /etc is a directory beneath it, not the host's.
    ex.init_code("etc", &filesys, harness::granted("/etc"))
        .expect(200);
    assert!(ex.granted_path(&root, NAMESPACE, "/etc").is_dir());
    let out = ex
        .run("etc", json!({"read_path": "/etc/passwd"}))
        .expect(200)
        .json();
    assert!(
        out["read"].is_null(),
        "the host's /etc stays out of reach: {out}"
    );
    assert!(
        std::fs::read_dir(ex.seen(&root.0.join(NAMESPACE)))
            .unwrap()
            .count()
            == 1
    );
}

#[test]
fn the_operator_chooses_the_namespaces_that_get_each_capability() {
    let root = ScratchDir::new("dir-root");
    let ex = Executor::start_with(&[
        "--dir-root",
        root.0.to_str().unwrap(),
        "--dir-namespaces",
        "alice,carol",
        "--net-namespaces",
        "alice",
    ]);
    let filesys = action("filesys");
    ex.init_code("alice-fs", &filesys, harness::granted_in("alice", "/data"))
        .expect(200);
    let r = ex.init_code("bob-fs", &filesys, harness::granted_in("bob", "/data"));
    let error = r.expect(502).error();
    assert!(
        error.contains("--dir-namespaces") && error.contains("bob"),
        "{error}"
    );
    assert!(
        !root.0.join("bob").exists(),
        "nothing made for a refused namespace"
    );
    let net = action("net");
    let with_net = |namespace: Option<&str>| {
        let mut value = json!({"annotations": {"net_access": true}});
        if let Some(namespace) = namespace {
            value["namespace"] = json!(namespace);
        }
        value
    };
    ex.init_code("alice-net", &net, with_net(Some("alice")))
        .expect(200);
    for (id, namespace) in [("bob-net", Some("bob")), ("nobody-net", None)] {
        let r = ex.init_code(id, &net, with_net(namespace));
        let error = r.expect(502).error();
        assert!(error.contains("--net-namespaces"), "{error}");
    }
    // Without a list every namespace may, also an /init that names none.
    let open = Executor::start();
    open.init_code("net", &net, with_net(None)).expect(200);
}

/// A one-shot-per-connection HTTP server on loopback that answers the first two GETs with
/// `body`: their URL (`http://127.0.0.1:PORT/hello`) and the server's thread.
pub(crate) fn serve(body: &'static str) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hello", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let mut stream = stream.unwrap();
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(reply.as_bytes()).unwrap();
        }
    });
    (url, handle)
}

/// A keep-alive HTTP server on loopback: each connection's answers are its number
/// (`connection 1`, …); it reports each connection its client closed on the channel. Returns
/// the base URL.
fn serve_kept_alive() -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (closed, closes) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for (number, stream) in (1..).zip(listener.incoming()) {
            let Ok(mut stream) = stream else { return };
            let closed = closed.clone();
            std::thread::spawn(move || {
                let body = format!("connection {number}");
                let mut buf = [0u8; 4096];
                while stream.read(&mut buf).is_ok_and(|n| n > 0) {
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
                let _ = closed.send(body);
            });
        }
    });
    (url, closes)
}

/// A container's GETs to one origin reuse the connection its last GET left open; another
/// container (here of another tenant) never gets it, and destroying the container closes it.
#[test]
fn net_access_keeps_a_containers_connection_to_itself() {
    let (url, closes) = serve_kept_alive();
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let ex = Executor::start_with(&["--net-allow", host]);
    for (id, namespace) in [("alice-net", "alice"), ("bob-net", "bob")] {
        ex.init_code(
            id,
            &action("net"),
            json!({"namespace": namespace, "annotations": {"net_access": true}}),
        )
        .expect(200);
    }
    let body = |id: &str| {
        let out = ex.run(id, json!({"url": url})).expect(200).json();
        assert_eq!(out["status"], 200, "{out}");
        out["body"].as_str().unwrap().to_owned()
    };
    assert_eq!(body("alice-net"), "connection 1");
    assert_eq!(
        body("alice-net"),
        "connection 1",
        "alice's connection, kept"
    );
    assert_eq!(body("bob-net"), "connection 2", "bob's own");
    assert_eq!(body("alice-net"), "connection 1");
    ex.post("/alice-net/destroy", "").expect(200);
    let closed = closes
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("alice's connection is closed with her container");
    assert_eq!(closed, "connection 1");
    assert_eq!(body("bob-net"), "connection 2");
}

#[test]
fn net_access_absent_means_no_import() {
    let ex = Executor::start();
    let r = ex.init_code("net", &action("net"), json!({}));
    let error = r.expect(502).error();
    assert!(
        error.contains("openwhisk::http_get") && error.contains("net_access"),
        "{error}"
    );
}

#[test]
fn net_access_performs_a_real_get_under_the_operator_policy() {
    let (url, server) = serve("hello from the host");
    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let ex = Executor::start_with(&["--net-allow", &host]);
    ex.init_code(
        "net",
        &action("net"),
        json!({"annotations": {"net_access": true}}),
    )
    .expect(200);
    let out = ex.run("net", json!({"url": url})).expect(200).json();
    assert_eq!(out["status"], 200, "{out}");
    assert_eq!(out["body"], "hello from the host");

    // Loopback on another port is not on the allow-list.
    let out = ex
        .run("net", json!({"url": "http://127.0.0.1:9/"}))
        .expect(200)
        .json();
    assert!(
        out["error"].as_str().unwrap().contains("internal address"),
        "{out}"
    );
    let out = ex
        .run("net", json!({"url": "file:///etc/passwd"}))
        .expect(200)
        .json();
    assert!(out["error"].as_str().unwrap().contains("http"), "{out}");
    drop(ex);
    drop(server);
}

#[test]
fn without_the_operator_allowing_it_loopback_is_unreachable() {
    let (url, _server) = serve("private");
    let ex = Executor::start();
    ex.init_code(
        "net",
        &action("net"),
        json!({"annotations": {"net_access": "true"}}),
    )
    .expect(200);
    let out = ex.run("net", json!({"url": url})).expect(200).json();
    assert!(
        out["error"].as_str().unwrap().contains("internal address"),
        "{out}"
    );
}

#[test]
fn each_capability_reads_its_own_annotation_and_refuses_other_shapes_by_name() {
    let ex = Executor::start();
    let net = action("net");
    for (id, annotations, named) in [
        ("yes", json!({"net_access": "yes"}), "net_access"),
        ("list", json!({"net_access": [true]}), "net_access"),
        ("number", json!({"dir": 5}), "dir"),
    ] {
        let value = json!({"namespace": "guest", "annotations": annotations});
        let error = ex.init_code(id, &net, value).expect(502).error();
        assert!(error.contains(named), "{id}: {error}");
    }
    // Asking for nothing is as if the annotation were absent: the import is not provided.
    let off = json!({"annotations": {"net_access": "false"}});
    let error = ex.init_code("off", &net, off).expect(502).error();
    assert!(error.contains("openwhisk::http_get"), "{error}");
    // Two capabilities at once: the directory and the import in one container.
    let both = json!({"namespace": "guest", "annotations": {"dir": "/data", "net_access": true}});
    ex.init_code("both", &net, both).expect(200);
    let out = ex
        .run("both", json!({"url": "file:///etc/passwd"}))
        .expect(200)
        .json();
    assert!(out["error"].as_str().unwrap().contains("http"), "{out}");
}

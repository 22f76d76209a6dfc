//! Containers whose /init carries the same code share one loaded module, freed with the last of
//! them; what a container is granted (directory, network) and its entry point stay its own.

use std::sync::Arc;

use serde_json::json;

use crate::harness::{Executor, ScratchDir, action};

/// The `wasm_executor_modules` gauge: distinct uploads that live containers hold.
fn modules(ex: &Executor) -> u64 {
    ex.gauge("modules")
}

#[test]
fn one_module_per_upload_freed_with_its_last_container() {
    let ex = Executor::start();
    assert_eq!(modules(&ex), 0);
    for id in ["a", "b", "c"] {
        ex.init_action(id, "add");
    }
    assert_eq!(modules(&ex), 1, "three containers, one upload");
    ex.init_action("e", "echo");
    assert_eq!(modules(&ex), 2);
    for id in ["a", "b", "c"] {
        let out = ex
            .run(id, json!({"param1": 2, "param2": 3}))
            .expect(200)
            .json();
        assert_eq!(out, json!({"result": 5}));
    }
    for id in ["a", "b"] {
        ex.post(&format!("/{id}/destroy"), "").expect(200);
    }
    assert_eq!(modules(&ex), 2, "the third container still holds it");
    let out = ex
        .run("c", json!({"param1": 1, "param2": 1}))
        .expect(200)
        .json();
    assert_eq!(out, json!({"result": 2}));
    ex.post("/c/destroy", "").expect(200);
    assert_eq!(modules(&ex), 1, "freed with its last container");
    ex.init_action("a", "add");
    assert_eq!(modules(&ex), 2, "loaded again");
    let out = ex
        .run("a", json!({"param1": 4, "param2": 4}))
        .expect(200)
        .json();
    assert_eq!(out, json!({"result": 8}));
}

#[test]
fn code_that_does_not_load_is_not_kept() {
    let ex = Executor::start();
    let garbage = b"\0asm\x01\0\0\0\x05garbage";
    for id in ["x", "y"] {
        let r = ex.init_code(id, garbage, json!({}));
        assert_eq!(r.status, 502, "{}", r.text());
    }
    assert_eq!(modules(&ex), 0);
    ex.run("x", json!({})).expect(404);
}

#[test]
fn concurrent_inits_of_one_upload_share_one_load() {
    let ex = Arc::new(Executor::start());
    let code = action("big");
    let inits: Vec<_> = (0..8)
        .map(|i| {
            let ex = Arc::clone(&ex);
            let code = code.clone();
            std::thread::spawn(move || {
                let id = format!("big{i}");
                ex.init_code(&id, &code, json!({})).expect(200);
                id
            })
        })
        .collect();
    let ids: Vec<String> = inits.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(modules(&ex), 1);
    for id in &ids {
        ex.run(id, json!({})).expect(200);
    }
}

#[test]
fn grants_stay_per_container_when_the_code_is_shared() {
    // The network import: the same upload links with it for one container and is refused
    // without the annotation for another, in either order.
    let ex = Executor::start();
    let net = action("net");
    ex.init_code("online", &net, json!({"annotations": {"net_access": true}}))
        .expect(200);
    let refused = ex.init_code("offline", &net, json!({}));
    let error = refused.expect(502).error();
    assert!(error.contains("net_access"), "{error}");
    ex.init_code(
        "online2",
        &net,
        json!({"annotations": {"net_access": true}}),
    )
    .expect(200);
    assert_eq!(modules(&ex), 1);

    // The directory: a container of the same upload without the grant sees none of it.
    let root = ScratchDir::new("shared-dir-root");
    let ex = Executor::start_with(&["--dir-root", root.0.to_str().unwrap()]);
    let dir = "/granted";
    let filesys = action("filesys");
    ex.init_code("with", &filesys, crate::harness::granted(dir))
        .expect(200);
    ex.init_code("without", &filesys, json!({})).expect(200);
    assert_eq!(modules(&ex), 1);
    let out = ex
        .run(
            "with",
            json!({"dir": dir, "file": "a.txt", "content": "mine"}),
        )
        .expect(200)
        .json();
    assert_eq!(out["read"], "mine", "{out}");
    assert!(
        ex.granted_path(&root, crate::harness::NAMESPACE, dir)
            .join("a.txt")
            .is_file()
    );
    let path = format!("{dir}/a.txt");
    let out = ex
        .run("without", json!({"read_path": path}))
        .expect(200)
        .json();
    assert!(out["read"].is_null() && out["read_errno"].is_i64(), "{out}");

    // The entry point: chosen per container.
    let add = action("add");
    let missing = ex.init_code("wrong-entry", &add, json!({"main": "no_such_export"}));
    assert!(missing.expect(502).error().contains("no_such_export"));
    ex.init_code("add", &add, json!({})).expect(200);
    let out = ex
        .run("add", json!({"param1": 1, "param2": 2}))
        .expect(200)
        .json();
    assert_eq!(out, json!({"result": 3}));
}

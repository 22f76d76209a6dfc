//! Bad input gets a clear answer with the right status, and the executor keeps serving.

use serde_json::json;

use crate::harness::{
    Executor, action, artifacts_only, b64, printing_module_text, stored_zip_of, zip_of,
};

#[test]
fn malformed_bodies_are_400_with_a_json_error() {
    let ex = Executor::start();
    ex.init_action("ok", "add");
    for (path, body) in [
        ("/x/init", "{not json"),
        ("/x/init", r#"{"value": "a string"}"#),
        ("/ok/run", "]["),
        ("/ok/run", ""),
    ] {
        let r = ex.post(path, body);
        assert!(
            r.expect(400).error().contains("invalid JSON"),
            "{path} {body}"
        );
    }
    ex.run("ok", json!({"param1": 1, "param2": 2})).expect(200);
}

#[test]
fn bad_code_is_refused_with_what_was_found() {
    let ex = Executor::start();
    let wasm = action("add");
    // A module stored uncompressed is read where it lies in the archive, after its checksum.
    let mut corrupt = stored_zip_of(&[("add.wasm", &wasm)]);
    let at = corrupt
        .windows(wasm.len())
        .position(|w| w == wasm.as_slice())
        .unwrap();
    corrupt[at + wasm.len() / 2] ^= 0xff;
    let cases: Vec<(&str, String, &str)> = vec![
        ("crc", b64(&corrupt), "checksum"),
        ("b64", "%%% not base64 %%%".into(), "base64"),
        ("notzip", b64(b"PK\x03\x04 this is no zip"), "zip"),
        (
            "two",
            b64(&zip_of(&[("a.wasm", &wasm), ("b.wasm", &wasm)])),
            "2 modules",
        ),
        (
            "none",
            b64(&zip_of(&[("main.py", b"print('hi')")])),
            "main.py",
        ),
        ("text", b64(b"just some text"), "not a WebAssembly module"),
        ("elf", b64(b"\x7fELF\x02\x01\x01\0\0\0\0"), "ELF"),
        ("broken", b64(b"\0asm\x01\0\0\0\x01\xff\xff"), "compile"),
    ];
    for (id, code, expected) in cases {
        let r = ex.init(
            id,
            json!({"name": id, "main": "main", "binary": true, "code": code}),
        );
        let error = r.expect(502).error();
        assert!(error.contains(expected), "{id}: {error}");
        // A failed init leaves nothing behind.
        ex.run(id, json!({})).expect(404);
    }
    ex.init_code("good", &wasm, json!({})).expect(200);
    // The same module stored uncompressed (an executor of artifacts only gets its artifacts
    // that way already).
    if !artifacts_only() {
        ex.init_code("stored", &stored_zip_of(&[("add.wasm", &wasm)]), json!({}))
            .expect(200);
        assert_eq!(
            ex.run("stored", json!({"a": 2, "b": 3})).expect(200).json(),
            ex.run("good", json!({"a": 2, "b": 3})).expect(200).json()
        );
    }
}

#[test]
fn code_sent_as_text_is_webassembly_text_or_a_request_to_zip_it() {
    let ex = Executor::start();
    // What OpenWhisk's controller sends for `wsk action create hello hello.wat`: the text, and
    // `binary: false` since it is not base64.
    let wat = printing_module_text(r#"{"hello": "text"}"#, "");
    ex.init("wat", json!({"name": "wat", "binary": false, "code": wat}))
        .expect(200);
    assert_eq!(
        ex.run("wat", json!({})).expect(200).json(),
        json!({"hello": "text"})
    );
    // What it sends for `wsk action create add add.wasm`: the binary file as a string, whose
    // bytes that are not UTF-8 became U+FFFD on the way.
    let mangled = String::from_utf8_lossy(&action("add")).into_owned();
    let r = ex.init(
        "bare",
        json!({"name": "bare", "binary": false, "code": mangled}),
    );
    let error = r.expect(502).error();
    assert!(error.contains("sent as a string"), "{error}");
    assert!(error.contains("zip NAME.zip NAME.wasm"), "{error}");
    let r = ex.init("js", json!({"binary": false, "code": "function main() {}"}));
    assert!(r.expect(502).error().contains("not WebAssembly text"));
    let r = ex.init(
        "badwat",
        json!({"binary": false, "code": "(module (func (i32.bogus)))"}),
    );
    assert!(r.expect(502).error().contains("does not compile"));
    ex.run("bare", json!({})).expect(404);
}

#[test]
fn unknown_containers_and_routes() {
    let ex = Executor::start();
    assert!(
        ex.run("ghost", json!({}))
            .expect(404)
            .error()
            .contains("not initialized")
    );
    ex.post("/ghost/destroy", "").expect(404);
    ex.get("/ghost/logs").expect(404);
    ex.get("/nowhere").expect(404);
    ex.get("/x/run").expect(405);
    ex.post("/bad%20id/init", "{}").expect(400);
    let long = "a".repeat(200);
    ex.post(&format!("/{long}/run"), "{}").expect(400);
}

#[test]
fn a_trapping_guest_is_an_error_and_the_container_goes_on() {
    let ex = Executor::start();
    ex.init_action("panic", "panic");
    let r = ex.run("panic", json!({"message": "boom"}));
    assert!(r.expect(502).error().contains("trapped"), "{}", r.text());
    let logs = ex.logs("panic");
    assert!(
        logs.iter()
            .any(|l| l["log"].as_str().unwrap().contains("boom")),
        "{logs:?}"
    );
    // The next run gets a fresh instance and succeeds.
    assert_eq!(
        ex.run("panic", json!({"ok": true})).expect(200).json()["ok"],
        true
    );
}

#[test]
fn bodies_over_the_limit_are_413() {
    let ex = Executor::start_with(&["--max-body-mb", "1"]);
    ex.init_action("echo", "echo");
    let r = ex.run("echo", json!({"big": "y".repeat(16 << 20)}));
    assert!(r.expect(413).error().len() > 5);
    ex.run("echo", json!({"small": 1})).expect(200);
}

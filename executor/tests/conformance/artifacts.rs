//! Precompiled artifacts: signed ones load, anything for another runtime, version or CPU, or
//! unsigned without the operator's explicit trust, or tampered, is refused before loading.
//! Portable modules are compiled once and cached under their content hash.

use std::path::{Path, PathBuf};

use serde_json::json;
use wasm_artifact::{OperatorKey, RuntimeId, sha256_hex};

use crate::harness::{BUILD_RUNTIME, Executor, ScratchDir, action, executor_target, precompile};

struct Keys {
    dir: ScratchDir,
}

impl Keys {
    fn new() -> Self {
        let dir = ScratchDir::new("keys");
        let key = OperatorKey::generate();
        std::fs::write(dir.0.join("operator.pem"), key.private_pem()).unwrap();
        std::fs::write(dir.0.join("operator.pub"), key.public_pem()).unwrap();
        Keys { dir }
    }

    fn private(&self) -> PathBuf {
        self.dir.0.join("operator.pem")
    }

    fn public(&self) -> String {
        self.dir
            .0
            .join("operator.pub")
            .to_string_lossy()
            .into_owned()
    }
}

/// An envelope written by hand, to claim what our precompiler never would.
fn forged_envelope(runtime: &str, version: &str, target: &str, payload: &[u8]) -> Vec<u8> {
    let header = json!({
        "runtime": runtime, "runtime_version": version, "target": target,
        "payload_sha256": sha256_hex(payload), "wasm_sha256": sha256_hex(b""),
    })
    .to_string();
    let mut out = wasm_artifact::MAGIC.to_vec();
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The runtime version `/health` reports, after checking that it names this build's runtime.
fn runtime_version(ex: &Executor) -> String {
    let health = ex.get("/health").json();
    assert_eq!(health["runtime"], BUILD_RUNTIME, "{health}");
    health["runtime_version"].as_str().unwrap().to_owned()
}

#[test]
fn signed_artifacts_load_and_run() {
    let keys = Keys::new();
    let ex = Executor::start_with(&["--trusted-key", &keys.public()]);
    let zip = precompile(
        &action("add"),
        &executor_target(),
        Some(&keys.private()),
        &keys.dir.0.join("add.zip"),
    );
    ex.init_code("add", &zip, json!({})).expect(200);
    assert_eq!(
        ex.run("add", json!({"param1": 20, "param2": 22}))
            .expect(200)
            .json(),
        json!({"result": 42})
    );
}

#[test]
fn unsigned_artifacts_need_the_trust_flag() {
    let keys = Keys::new();
    let ex = Executor::start_with(&["--trusted-key", &keys.public()]);
    let zip = precompile(
        &action("echo"),
        &executor_target(),
        None,
        &keys.dir.0.join("echo.zip"),
    );
    let r = ex.init_code("echo", &zip, json!({}));
    assert!(r.expect(502).error().contains("not signed"), "{}", r.text());

    let trusting = Executor::start_with(&["--allow-unsigned-artifacts"]);
    trusting.init_code("echo", &zip, json!({})).expect(200);
    assert_eq!(
        trusting.run("echo", json!({"a": 1})).expect(200).json(),
        json!({"a": 1})
    );
}

#[test]
fn a_signature_by_another_key_or_a_tampered_payload_is_refused() {
    let keys = Keys::new();
    let stranger = Keys::new();
    let ex = Executor::start_with(&[
        "--trusted-key",
        &keys.public(),
        "--allow-unsigned-artifacts",
    ]);
    let zip = precompile(
        &action("add"),
        &executor_target(),
        Some(&stranger.private()),
        &keys.dir.0.join("s.zip"),
    );
    let r = ex.init_code("stranger", &zip, json!({}));
    assert!(r.expect(502).error().contains("signature"), "{}", r.text());

    let raw = precompile(
        &action("add"),
        &executor_target(),
        None,
        &keys.dir.0.join("t.zip"),
    );
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(raw)).unwrap();
    let mut artifact = Vec::new();
    std::io::Read::read_to_end(&mut archive.by_index(0).unwrap(), &mut artifact).unwrap();
    let last = artifact.len() - 1;
    artifact[last] ^= 0xff;
    let r = ex.init_code("tampered", &artifact, json!({}));
    assert!(
        r.expect(502).error().contains("does not match the hash"),
        "{}",
        r.text()
    );
}

#[test]
fn artifacts_for_another_cpu_runtime_or_version_are_refused() {
    let keys = Keys::new();
    let ex = Executor::start_with(&[
        "--trusted-key",
        &keys.public(),
        "--allow-unsigned-artifacts",
    ]);
    let version = runtime_version(&ex);
    let other_target = if executor_target().starts_with("aarch64") {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    };
    let zip = precompile(
        &action("add"),
        other_target,
        Some(&keys.private()),
        &keys.dir.0.join("arm.zip"),
    );
    let r = ex.init_code("cpu", &zip, json!({}));
    assert!(r.expect(502).error().contains(other_target), "{}", r.text());

    let other_runtime = RuntimeId::ALL
        .into_iter()
        .map(|r| r.name())
        .find(|name| *name != BUILD_RUNTIME)
        .unwrap();
    let forged = forged_envelope(other_runtime, "1.0.0", &executor_target(), b"native code");
    let r = ex.init_code("runtime", &forged, json!({}));
    assert!(
        r.expect(502)
            .error()
            .contains(&format!("for {other_runtime}")),
        "{}",
        r.text()
    );

    let forged = forged_envelope(
        BUILD_RUNTIME,
        "0.0.1-old",
        &executor_target(),
        b"native code",
    );
    let r = ex.init_code("version", &forged, json!({}));
    let error = r.expect(502).error();
    assert!(
        error.contains("0.0.1-old") && error.contains(&version),
        "{error}"
    );
}

/// Compiled modules in the cache below `dir` (its entries are `*.bin`).
fn cached_modules(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        cached_modules(&e.path())
                    } else {
                        usize::from(e.path().extension().is_some_and(|x| x == "bin"))
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn portable_modules_are_compiled_once_and_cached() {
    let ex = Executor::start();
    let compiles = match ex.get("/health").json()["portable_modules"].as_str() {
        Some("compiled") => true,
        Some("interpreted") => false,
        other => panic!("this build must run portable modules, /health says {other:?}"),
    };
    // WAMR interprets portable modules; wasmtime and wasmer compile them.
    assert_eq!(compiles, BUILD_RUNTIME != "wamr", "{BUILD_RUNTIME}");
    assert_eq!(cached_modules(&ex.cache), 0);
    ex.init_action("first", "big");
    let cached = cached_modules(&ex.cache);
    if compiles {
        assert!(cached >= 1, "the compiled module is cached");
    } else {
        assert_eq!(cached, 0, "an interpreter has nothing to cache");
    }
    ex.init_action("second", "big");
    assert_eq!(
        cached_modules(&ex.cache),
        cached,
        "the second init adds nothing to the cache"
    );
    ex.run("second", json!({})).expect(200);
    // A fresh executor with the same cache directory starts warm too.
    let again = Executor::start_with(&["--cache-dir", ex.cache.to_str().unwrap()]);
    again.init_action("third", "big");
    assert_eq!(cached_modules(&ex.cache), cached);
    again.run("third", json!({})).expect(200);
}

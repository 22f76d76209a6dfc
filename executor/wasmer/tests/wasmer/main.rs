//! Tests of the wasmer builds beyond the shared conformance suite: the precompile → zip → /init
//! path for both builds, limits on precompiled code (nothing is compiled into artifacts for the
//! time limit, so they must stop like portable modules), refusals of foreign and lying
//! artifacts without crashing, the cache, and what the headless build refuses.
//!
//! Run with `--features llvm` or `--features headless`; the precompiler
//! `wasm-precompile-wasmer` must be built next to the executor (`make precompiler-wasmer`).

use wasm_executor_testkit as harness;

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use serde_json::json;
use wasm_artifact::{Envelope, OperatorKey, host_target, sha256_hex};

use harness::{Executor, ScratchDir, action, deadline_in, zip_of};

fn tool(name: &str) -> PathBuf {
    harness::build_dir().join(name)
}

/// `wasm` precompiled by wasm-precompile-wasmer for `target`: the bare envelope bytes.
fn precompile(wasm: &[u8], target: &str, dir: &ScratchDir) -> Vec<u8> {
    precompile_with(wasm, target, dir, "wasm-precompile-wasmer")
}

fn precompile_with(wasm: &[u8], target: &str, dir: &ScratchDir, binary: &str) -> Vec<u8> {
    let input = dir.0.join(format!("{}.wasm", sha256_hex(wasm)));
    let output = input.with_extension(format!("{binary}.{target}.owart"));
    std::fs::write(&input, wasm).unwrap();
    let status = std::process::Command::new(tool(binary))
        .arg(&input)
        .args(["--target", target, "-o"])
        .arg(&output)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; build it first (make precompiler-wasmer)",
                tool(binary).display()
            )
        });
    assert!(status.success(), "{binary} failed for {target}");
    std::fs::read(&output).unwrap()
}

/// The action as this build loads it: portable where a compiler is built in, else precompiled.
fn loadable(name: &str, dir: &ScratchDir) -> Vec<u8> {
    if cfg!(feature = "headless") {
        precompile(&action(name), &host_target(), dir)
    } else {
        action(name)
    }
}

fn trusting() -> Executor {
    Executor::start_with(&["--allow-unsigned-artifacts"])
}

#[test]
fn a_signed_zipped_artifact_initializes_and_runs() {
    let dir = ScratchDir::new("wasmer-zip");
    let key = OperatorKey::generate();
    std::fs::write(dir.0.join("op.pem"), key.private_pem()).unwrap();
    std::fs::write(dir.0.join("op.pub"), key.public_pem()).unwrap();
    std::fs::write(dir.0.join("echo.wasm"), action("echo")).unwrap();
    // Through the front end, exactly as docs/security.md tells operators to do it.
    let status = std::process::Command::new(tool("wasm-precompile"))
        .args(["compile", "--runtime", "wasmer", "--"])
        .arg(dir.0.join("echo.wasm"))
        .arg("--sign-key")
        .arg(dir.0.join("op.pem"))
        .args(["--zip", "-o"])
        .arg(dir.0.join("echo.zip"))
        .stdout(std::process::Stdio::null())
        .status()
        .expect("wasm-precompile is built by the default build (make build)");
    assert!(status.success());
    let zip = std::fs::read(dir.0.join("echo.zip")).unwrap();
    let ex = Executor::start_with(&["--trusted-key", dir.0.join("op.pub").to_str().unwrap()]);
    ex.init_code("echo", &zip, json!({})).expect(200);
    assert_eq!(
        ex.run("echo", json!({"k": [1, 2]})).expect(200).json(),
        json!({"k": [1, 2]})
    );
}

#[test]
fn a_precompiled_infinite_loop_stops_at_its_deadline() {
    let dir = ScratchDir::new("wasmer-loop");
    let ex = trusting();
    ex.init_code(
        "loop",
        &precompile(&action("loop"), &host_target(), &dir),
        json!({}),
    )
    .expect(200);
    let started = Instant::now();
    let body = json!({"value": {"forever": true}, "deadline": deadline_in(1000)});
    let r = ex.post("/loop/run", &body.to_string());
    let took = started.elapsed();
    assert!(
        r.expect(502).error().contains("exceeded its time limit"),
        "{}",
        r.text()
    );
    ex.assert_stopped_on_time(took, Duration::from_millis(1000), "a precompiled loop");
    ex.run("loop", json!({})).expect(200);
}

#[test]
fn a_guest_calling_the_host_in_a_loop_stops_at_its_deadline() {
    // `{"ms": N}` busy-waits on the clock: a host call per iteration, the case where the
    // watchdog must not signal and the host functions end the activation themselves.
    let dir = ScratchDir::new("wasmer-clock");
    let ex = trusting();
    ex.init_code(
        "spin",
        &loadable("loop", &dir),
        json!({"limits": {"timeout": 700}}),
    )
    .expect(200);
    for _ in 0..3 {
        let started = Instant::now();
        let r = ex.run("spin", json!({"ms": 60_000}));
        let took = started.elapsed();
        assert!(
            r.expect(502).error().contains("700 milliseconds"),
            "{}",
            r.text()
        );
        ex.assert_stopped_on_time(
            took,
            Duration::from_millis(700),
            "a guest spinning on the clock",
        );
    }
    assert_eq!(
        ex.run("spin", json!({"ms": 5})).expect(200).json()["ok"],
        true
    );
}

#[test]
fn a_start_function_that_loops_is_stopped_too() {
    let dir = ScratchDir::new("wasmer-start");
    let wasm = wat::parse_str(
        r#"(module
             (memory (export "memory") 1)
             (func $spin (loop $l (br $l)))
             (start $spin)
             (func (export "_start")))"#,
    )
    .unwrap();
    let code = if cfg!(feature = "headless") {
        precompile(&wasm, &host_target(), &dir)
    } else {
        wasm
    };
    let ex = trusting();
    ex.init_code("start", &code, json!({"limits": {"timeout": 300}}))
        .expect(200);
    let started = Instant::now();
    let r = ex.run("start", json!({}));
    let took = started.elapsed();
    assert_eq!(
        r.expect(502).error(),
        "The action exceeded its time limits of 300 milliseconds."
    );
    ex.assert_stopped_on_time(took, Duration::from_millis(300), "a looping start function");
}

#[test]
fn the_memory_limit_applies_to_artifacts() {
    let dir = ScratchDir::new("wasmer-mem");
    let ex = trusting();
    let hog = precompile(&action("memhog"), &host_target(), &dir);
    ex.init_code("hog", &hog, json!({"limits": {"memory": 64}}))
        .expect(200);
    let r = ex.run("hog", json!({"mb": 128}));
    assert_eq!(
        r.expect(502).error(),
        "The action exhausted its memory and was aborted."
    );
    ex.run("hog", json!({"mb": 16})).expect(200);
}

#[test]
fn foreign_and_bare_artifacts_are_refused_before_loading() {
    let dir = ScratchDir::new("wasmer-foreign");
    let ex = trusting();
    // A real wasmtime artifact (made by the default build's precompiler).
    let wasmtime = precompile_with(
        &action("add"),
        &host_target(),
        &dir,
        "wasm-precompile-wasmtime",
    );
    let r = ex.init_code("wasmtime", &wasmtime, json!({}));
    assert!(
        r.expect(502).error().contains("for wasmtime"),
        "{}",
        r.text()
    );
    // A wasmer artifact without our envelope: native code of unknown origin is never loaded.
    let artifact = precompile(&action("add"), &host_target(), &dir);
    let ours = Envelope::parse(&artifact).unwrap();
    let r = ex.init_code(
        "bare",
        &zip_of(&[("add.wasmer", &*ours.payload)]),
        json!({}),
    );
    assert!(
        r.expect(502)
            .error()
            .contains("holds no WebAssembly module"),
        "{}",
        r.text()
    );
    let r = ex.init_code("bare2", &ours.payload, json!({}));
    assert!(
        r.expect(502).error().contains("wasmer artifact"),
        "{}",
        r.text()
    );
    assert_eq!(ex.get("/health").expect(200).json()["status"], "ok");
}

#[test]
fn an_envelope_lying_about_the_cpu_is_refused_not_run() {
    // Unsigned and trusted by the operator, the envelope claims this machine's target while
    // the payload is aarch64 (or x86_64 on an aarch64 host). Wasmer would run foreign machine
    // code; the CPU features our precompiler records make it refuse the payload instead.
    let dir = ScratchDir::new("wasmer-lie");
    let other = if host_target().starts_with("aarch64") {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    };
    let artifact = precompile(&action("add"), other, &dir);
    let foreign = Envelope::parse(&artifact).unwrap();
    let lying = Envelope::new(
        wasm_artifact::RuntimeId::Wasmer,
        &host_target(),
        &action("add"),
        foreign.payload.into_owned(),
    );
    let ex = trusting();
    let r = ex.init_code("lie", &lying.to_bytes(), json!({}));
    assert!(r.expect(502).error().contains("CPU"), "{}", r.text());
    ex.run("lie", json!({})).expect(404);
    assert_eq!(ex.get("/health").expect(200).json()["status"], "ok");
}

#[test]
fn precompiling_for_aarch64_works_and_is_refused_here_by_the_envelope() {
    let dir = ScratchDir::new("wasmer-arm");
    let artifact = precompile(&action("hash"), "aarch64-unknown-linux-gnu", &dir);
    let envelope = Envelope::parse(&artifact).unwrap();
    assert_eq!(envelope.header.runtime, "wasmer");
    assert_eq!(envelope.header.target, "aarch64-unknown-linux-gnu");
    if !host_target().starts_with("aarch64") {
        let ex = trusting();
        let r = ex.init_code("arm", &artifact, json!({}));
        assert!(
            r.expect(502).error().contains("aarch64-unknown-linux-gnu"),
            "{}",
            r.text()
        );
    }
}

#[cfg(feature = "headless")]
#[test]
fn headless_refuses_portable_wasm_with_a_clear_error() {
    let ex = Executor::start();
    let r = ex.init_code("add", &action("add"), json!({}));
    let error = r.expect(502).error();
    assert!(
        error.contains("headless") && error.contains("precompile"),
        "{error}"
    );
}

#[cfg(not(feature = "headless"))]
#[test]
fn a_broken_cache_entry_is_recompiled_not_loaded() {
    let ex = Executor::start();
    ex.init_action("a", "add");
    let dir = ex.cache.join("wasmer");
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    std::fs::write(&entries[0], b"wasmer-universal but not really").unwrap();
    let again = Executor::start_with(&["--cache-dir", ex.cache.to_str().unwrap()]);
    again.init_action("b", "add");
    assert_eq!(
        again
            .run("b", json!({"param1": 1, "param2": 2}))
            .expect(200)
            .json(),
        json!({"result": 3})
    );
    assert!(
        std::fs::read(&entries[0]).unwrap().len() > 1000,
        "the entry was rewritten"
    );
}

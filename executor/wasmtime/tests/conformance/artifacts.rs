//! Precompiled artifacts: signed ones load, anything for another runtime, version or CPU, or
//! unsigned without the operator's explicit trust, or tampered, is refused before loading.
//! Code for a CPU level runs where the CPU has the level and is refused where it does not.
//! Portable modules are compiled once and cached under their content hash. WAMR code that
//! executes in place runs like any other artifact.

use std::path::{Path, PathBuf};

use serde_json::json;
use wasm_artifact::{OperatorKey, RuntimeId, sha256_hex};

use crate::harness::{
    Executor, ScratchDir, action, artifacts_only, behind_launcher, build_runtime, executor_target,
    precompile, try_precompile,
};

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
    assert_eq!(health["runtime"], build_runtime(), "{health}");
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
        .find(|name| *name != build_runtime())
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
        build_runtime(),
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

/// The CPU levels of `wasm-precompile --cpu` for this machine's architecture, and whether this
/// machine has each (every feature of it that any backend's code may use).
fn levels_of_this_machine() -> Vec<(&'static str, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let v2 = has!("sse3")
            && has!("ssse3")
            && has!("sse4.1")
            && has!("sse4.2")
            && has!("popcnt")
            && has!("cmpxchg16b");
        let v3 = v2
            && has!("avx")
            && has!("avx2")
            && has!("bmi1")
            && has!("bmi2")
            && has!("fma")
            && has!("f16c")
            && has!("lzcnt")
            && has!("movbe");
        let v4 = v3
            && has!("avx512f")
            && has!("avx512bw")
            && has!("avx512cd")
            && has!("avx512dq")
            && has!("avx512vl");
        vec![("x86-64-v2", v2), ("x86-64-v3", v3), ("x86-64-v4", v4)]
    }
    #[cfg(target_arch = "aarch64")]
    {
        use std::arch::is_aarch64_feature_detected as has;
        let a76 = has!("crc") && has!("lse") && has!("rcpc") && has!("dotprod") && has!("fp16");
        vec![("cortex-a72", has!("crc")), ("cortex-a76", a76)]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    Vec::new()
}

#[test]
fn code_for_a_cpu_level_runs_where_the_cpu_has_it_and_is_refused_elsewhere() {
    let target = executor_target();
    if target != wasm_artifact::host_target() {
        // An emulated executor of another architecture: this machine's CPU says nothing
        // about the emulated one's.
        return;
    }
    let keys = Keys::new();
    let ex = Executor::start_with(&["--trusted-key", &keys.public()]);
    let params = json!({"iterations": 500, "input": "levels"});
    let portable = precompile(
        &action("hash"),
        &target,
        Some(&keys.private()),
        &keys.dir.0.join("p.zip"),
    );
    ex.init_code("portable", &portable, json!({})).expect(200);
    let expected = ex.run("portable", params.clone()).expect(200).json();
    for (level, has) in levels_of_this_machine() {
        let zip = precompile_level(&keys, &target, level);
        let r = ex.init_code(level, &zip, json!({}));
        // Where this CPU lacks the level, a backend whose code uses none of the missing
        // features (wasmer's LLVM names no Arm feature beyond NEON) loads it: it must then
        // compute what portable code does. Otherwise it is refused, never run.
        if has || r.status == 200 {
            r.expect(200);
            assert_eq!(
                ex.run(level, params.clone()).expect(200).json(),
                expected,
                "{level}"
            );
        } else {
            assert!(!r.expect(502).error().is_empty(), "{level}");
        }
    }
    // A level of another architecture is refused by the precompiler, by name.
    let other = if target.starts_with("aarch64") {
        "x86-64-v3"
    } else {
        "cortex-a76"
    };
    let error = try_precompile(
        &action("add"),
        &target,
        &["--cpu", other],
        None,
        &keys.dir.0.join("o.zip"),
    )
    .unwrap_err();
    assert!(error.contains(other) && error.contains("not of"), "{error}");

    // On an x86_64 machine, the executor on an emulated CPU with SSE4.2 but no AVX (qemu-user,
    // from `scripts/prerequisites.sh wamr`) refuses x86-64-v3 code instead of dying of SIGILL
    // at its first AVX instruction, and goes on serving. (Not where a launcher runs the
    // executor, such as the OCI image: there is no binary of it here to emulate.)
    if !cfg!(target_arch = "x86_64") || behind_launcher() {
        return;
    }
    let v3 = precompile_level(&keys, &target, "x86-64-v3");
    let emulated = Executor::start_launched(
        &["qemu-x86_64-static", "-cpu", "Westmere"],
        &["--trusted-key", &keys.public(), "--max-instances", "32"],
    );
    let r = emulated.init_code("v3", &v3, json!({}));
    let error = r.expect(502).error();
    assert!(error.to_lowercase().contains("avx"), "{error}");
    emulated.run("v3", json!({})).expect(404);
    emulated.init_action("add", "add");
    assert_eq!(
        emulated
            .run("add", json!({"param1": 1, "param2": 2}))
            .expect(200)
            .json(),
        json!({"result": 3})
    );
}

/// `hash` compiled for the CPU level `level`, signed.
fn precompile_level(keys: &Keys, target: &str, level: &str) -> Vec<u8> {
    try_precompile(
        &action("hash"),
        target,
        &["--cpu", level],
        Some(&keys.private()),
        &keys.dir.0.join(format!("{level}.zip")),
    )
    .unwrap_or_else(|e| panic!("{e}"))
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
    assert_eq!(compiles, build_runtime() != "wamr", "{}", build_runtime());
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

/// `--xip` is a flag of WAMR's compiler alone: on WAMR, `hash` precompiled as code that executes
/// in place (for the executor's target, signed) gives the portable module's results; the other
/// runtimes' compilers refuse the flag instead of ignoring it.
#[test]
fn wamr_code_executing_in_place_runs_and_other_compilers_refuse_the_flag() {
    let keys = Keys::new();
    let out = keys.dir.0.join("hash-xip.zip");
    let compiled = try_precompile(
        &action("hash"),
        &executor_target(),
        &["--xip"],
        Some(&keys.private()),
        &out,
    );
    if build_runtime() != "wamr" {
        let refusal = compiled.expect_err("only WAMR's compiler takes --xip");
        assert!(refusal.contains("--xip"), "{refusal}");
        return;
    }
    let zip = compiled.unwrap_or_else(|e| panic!("{e}"));
    let ex = Executor::start_with(&["--trusted-key", &keys.public()]);
    let params = json!({"iterations": 1500, "input": "xip"});
    ex.init_code("xip", &zip, json!({})).expect(200);
    if artifacts_only() {
        // A build that takes no portable Wasm: the default precompiled code is the reference.
        let default = precompile(
            &action("hash"),
            &executor_target(),
            Some(&keys.private()),
            &keys.dir.0.join("hash.zip"),
        );
        ex.init_code("reference", &default, json!({})).expect(200);
    } else {
        ex.init_action("reference", "hash");
    }
    let expected = ex.run("reference", params.clone()).expect(200).json();
    assert_eq!(ex.run("xip", params).expect(200).json(), expected);
}

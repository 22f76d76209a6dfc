//! Tests of the WAMR build beyond the shared conformance suite: AOT artifacts from our
//! precompiler next to the same modules on the interpreter, refusal of artifacts compiled under
//! another profile, for another CPU, for CPU features the machine lacks (an executor on an older
//! CPU emulated by qemu-user) or holding something else than AOT code, out-of-bounds
//! accesses and runaway recursion that trap (guard pages) while the process keeps serving,
//! start functions, memory limits, the time limit for many looping guests at once, and a
//! language engine run as the AOT code beside it.
//!
//! Run with `--features wamr`; `wasm-precompile-wamr` (and `wasm-precompile`, from the default
//! build) must be built next to the executor: `make test-wamr` does all of it.

use wasm_executor_testkit as harness;

use std::{
    path::PathBuf,
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use wamr_profile::CodeCpu;
use wasm_artifact::{Envelope, OperatorKey, RuntimeId, host_target, sha256_hex};

use harness::{Executor, ScratchDir, action, deadline_in};

fn tool(name: &str) -> PathBuf {
    harness::build_dir().join(name)
}

/// Runs wasm-precompile-wamr on `wasm` with `flags`; the envelope bytes, or the error output.
fn try_precompile_with(
    wasm: &[u8],
    target: &str,
    flags: &[&str],
    dir: &ScratchDir,
) -> Result<Vec<u8>, String> {
    let input = dir.0.join(format!("{}.wasm", sha256_hex(wasm)));
    let output = input.with_extension(format!("{target}{}.owart", flags.concat()));
    std::fs::write(&input, wasm).unwrap();
    let result = Command::new(tool("wasm-precompile-wamr"))
        .arg(&input)
        .args(["--target", target])
        .args(flags)
        .arg("-o")
        .arg(&output)
        .stdout(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("wasm-precompile-wamr: {e}; build it first (make precompiler-wamr)")
        });
    if result.status.success() {
        Ok(std::fs::read(&output).unwrap())
    } else {
        Err(String::from_utf8_lossy(&result.stderr).into_owned())
    }
}

fn try_precompile(wasm: &[u8], target: &str, dir: &ScratchDir) -> Result<Vec<u8>, String> {
    try_precompile_with(wasm, target, &[], dir)
}

fn precompile(wasm: &[u8], target: &str, dir: &ScratchDir) -> Vec<u8> {
    try_precompile(wasm, target, dir).unwrap_or_else(|e| panic!("precompiling for {target}: {e}"))
}

/// `wasm` precompiled for this machine as code that executes in place (`--xip`).
fn precompile_xip(wasm: &[u8], dir: &ScratchDir) -> Vec<u8> {
    try_precompile_with(wasm, &host_target(), &["--xip"], dir)
        .unwrap_or_else(|e| panic!("precompiling with --xip: {e}"))
}

/// The module in every form this build runs: portable (interpreter), AOT code WAMR copies,
/// and AOT code that executes in place.
fn every_tier(wasm: &[u8], dir: &ScratchDir) -> [(&'static str, Vec<u8>); 3] {
    [
        ("interp", wasm.to_vec()),
        ("aot", precompile(wasm, &host_target(), dir)),
        ("xip", precompile_xip(wasm, dir)),
    ]
}

/// The one file in a zip written with `--zip`.
fn only_entry(zip: &[u8]) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut archive.by_index(0).unwrap(), &mut bytes).unwrap();
    bytes
}

/// `add` precompiled for this machine and taken apart, to forge artifacts from: the module, this
/// build's profile, its tag and the AOT file.
struct AddParts {
    wasm: Vec<u8>,
    target: wamr_profile::TargetProfile,
    profile: String,
    aot: Vec<u8>,
}

impl AddParts {
    fn new(dir: &ScratchDir) -> Self {
        let wasm = action("add");
        let artifact = precompile(&wasm, &host_target(), dir);
        let target = wamr_profile::TargetProfile::this_machine().unwrap();
        let profile = wamr_profile::profile_tag(RuntimeId::Wamr.locked_version(), target);
        let payload = Envelope::parse(&artifact).unwrap().payload.into_owned();
        let (aot, cpu) = wamr_profile::unwrap(&profile, target.cpu, |_| true, &payload).unwrap();
        assert_eq!(cpu, CodeCpu::portable(target.cpu));
        let aot = aot.to_vec();
        AddParts {
            wasm,
            target,
            profile,
            aot,
        }
    }

    /// An unsigned artifact for this machine holding `payload`.
    fn artifact(&self, payload: Vec<u8>) -> Vec<u8> {
        Envelope::new(RuntimeId::Wamr, &host_target(), &self.wasm, payload).to_bytes()
    }
}

fn trusting() -> Executor {
    Executor::start_with(&["--allow-unsigned-artifacts"])
}

fn healthy(ex: &Executor) {
    assert_eq!(ex.get("/health").expect(200).json()["status"], "ok");
}

/// A WASI command in WAT whose `_start` runs `body` and then prints `{"ok":true}`; `extra`
/// (imports first, then functions) goes before the memory.
fn command(body: &str, extra: &str) -> Vec<u8> {
    command_with_pages(1, body, extra)
}

/// [`command`] with `pages` of linear memory.
fn command_with_pages(pages: u32, body: &str, extra: &str) -> Vec<u8> {
    let wat = format!(
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  {extra}
  (memory (export "memory") {pages})
  (data (i32.const 1024) "{{\"ok\":true}}\n")
  (func (export "_start")
    {body}
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 12))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#
    );
    wat::parse_str(&wat).expect("valid WAT fixture")
}

#[test]
fn a_signed_zipped_artifact_runs_as_aot_code_with_the_interpreters_results() {
    let dir = ScratchDir::new("wamr-zip");
    let key = OperatorKey::generate();
    std::fs::write(dir.0.join("op.pem"), key.private_pem()).unwrap();
    std::fs::write(dir.0.join("op.pub"), key.public_pem()).unwrap();
    std::fs::write(dir.0.join("hash.wasm"), action("hash")).unwrap();
    let ex = Executor::start_with(&["--trusted-key", dir.0.join("op.pub").to_str().unwrap()]);
    ex.init_action("interp", "hash");
    let params = json!({"iterations": 2000, "input": "wamr"});
    let interp = ex.run("interp", params.clone()).expect(200).json();
    assert_eq!(interp["iterations"], 2000);
    let target = wamr_profile::TargetProfile::this_machine().unwrap();
    let profile = wamr_profile::profile_tag(RuntimeId::Wamr.locked_version(), target);
    // Portable code, code that executes in place, and code with this machine's CPU features,
    // which the tag names.
    for (id, extra, cpu) in [
        ("aot", None, CodeCpu::portable(target.cpu)),
        ("xip", Some("--xip"), CodeCpu::portable(target.cpu)),
        (
            "native",
            Some("--native-cpu"),
            CodeCpu::with_optional(target.cpu, wamr_profile::cpu::host_has),
        ),
    ] {
        let zip = dir.0.join(format!("{id}.zip"));
        // Through the front end, as docs/security.md tells operators to do it.
        let status = Command::new(tool("wasm-precompile"))
            .args(["compile", "--runtime", "wamr", "--"])
            .arg(dir.0.join("hash.wasm"))
            .args(extra)
            .arg("--sign-key")
            .arg(dir.0.join("op.pem"))
            .args(["--zip", "-o"])
            .arg(&zip)
            .stdout(Stdio::null())
            .status()
            .expect("wasm-precompile is built by the default build (make build)");
        assert!(status.success());
        let zip = std::fs::read(zip).unwrap();
        let artifact = only_entry(&zip);
        let envelope = Envelope::parse(&artifact).unwrap();
        let (_, found) =
            wamr_profile::unwrap(&profile, target.cpu, |_| true, &envelope.payload).unwrap();
        assert_eq!(found, cpu, "{id}");
        ex.init_code(id, &zip, json!({})).expect(200);
        assert_eq!(
            ex.run(id, params.clone()).expect(200).json(),
            interp,
            "{id}"
        );
    }
}

#[test]
fn artifacts_for_another_profile_cpu_or_kind_are_refused_without_harm() {
    let dir = ScratchDir::new("wamr-refuse");
    let add = AddParts::new(&dir);
    let (wasm, target, profile, aot) = (&add.wasm, add.target, &add.profile, &add.aot[..]);
    let portable = CodeCpu::portable(target.cpu);
    let tag = format!("{profile} {portable}");
    let forge = |payload: Vec<u8>| add.artifact(payload);
    let artifact = add.artifact(wamr_profile::wrap(&tag, aot));
    let ex = trusting();

    // Compiled under another profile (here: claiming software bounds checks).
    let other = tag.replace("guard-pages", "bounds-checks");
    let r = ex.init_code(
        "profile",
        &forge(wamr_profile::wrap(&other, aot)),
        json!({}),
    );
    let error = r.expect(502).error();
    assert!(
        error.contains("compiled for") && error.contains("bounds-checks"),
        "{error}"
    );

    // An artifact from the precompiler before tags named the code's CPU (the profile's previous
    // tag): refused by name, so the operator knows to precompile again.
    let r = ex.init_code(
        "previous",
        &forge(wamr_profile::wrap(profile, aot)),
        json!({}),
    );
    let error = r.expect(502).error();
    assert!(
        error.contains(&format!(
            "the artifact was compiled for {profile}, but this executor runs {tag}; precompile it again with the matching wasm-precompile-wamr"
        )),
        "{error}"
    );

    // Code for a CPU model this profile never compiles for, or with a feature it never adds.
    for (id, cpu) in [
        ("model", "cpu skylake".to_owned()),
        ("feature", format!("{portable} +sha")),
    ] {
        let r = ex.init_code(
            id,
            &forge(wamr_profile::wrap(&format!("{profile} {cpu}"), aot)),
            json!({}),
        );
        let error = r.expect(502).error();
        assert!(
            error.contains(&cpu) && error.contains("precompile it again"),
            "{error}"
        );
    }
    // Code using a feature this machine lacks, where it lacks one (WAMR's loader would run it
    // and the first such instruction would kill the executor with SIGILL).
    let lacking = target
        .cpu
        .optional
        .iter()
        .find(|f| !wamr_profile::cpu::host_has(f));
    if let Some(feature) = lacking {
        let r = ex.init_code(
            "lacking",
            &forge(wamr_profile::wrap(&format!("{tag} +{feature}"), aot)),
            json!({}),
        );
        let error = r.expect(502).error();
        assert!(
            error.contains(&format!("CPU features this machine lacks ({feature})")),
            "{error}"
        );
        ex.run("lacking", json!({})).expect(404);
    }

    // Our tag on something that is not AOT code: bytecode, garbage.
    let r = ex.init_code(
        "bytecode",
        &forge(wamr_profile::wrap(&tag, wasm)),
        json!({}),
    );
    assert!(
        r.expect(502).error().contains("not a WAMR AOT module"),
        "{}",
        r.text()
    );
    let r = ex.init_code(
        "garbage",
        &forge(wamr_profile::wrap(&tag, b"\0aot\x05\0\0\0junk")),
        json!({}),
    );
    assert!(
        r.expect(502).error().contains("does not load"),
        "{}",
        r.text()
    );

    // An envelope lying about the architecture: the tag names the other one's CPU; and behind
    // our own tag, WAMR's loader checks the machine in the AOT file.
    let other_target = if host_target().starts_with("aarch64") {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    };
    let other =
        wamr_profile::TargetProfile::for_arch(other_target.split('-').next().unwrap()).unwrap();
    let other_cpu = CodeCpu::portable(other.cpu);
    let foreign_artifact = precompile(wasm, other_target, &dir);
    let foreign = Envelope::parse(&foreign_artifact).unwrap();
    let r = ex.init_code("lie", &forge(foreign.payload.to_vec()), json!({}));
    let error = r.expect(502).error();
    assert!(
        error.contains(&format!("compiled for {profile} {other_cpu},")),
        "{error}"
    );
    let other_profile = wamr_profile::profile_tag(RuntimeId::Wamr.locked_version(), other);
    let (foreign_aot, _) =
        wamr_profile::unwrap(&other_profile, other.cpu, |_| true, &foreign.payload).unwrap();
    let r = ex.init_code(
        "lie-deeper",
        &forge(wamr_profile::wrap(&tag, foreign_aot)),
        json!({}),
    );
    assert!(r.expect(502).error().contains("target"), "{}", r.text());

    // A bare AOT file, without our envelope.
    let r = ex.init_code("bare", aot, json!({}));
    assert!(
        r.expect(502).error().contains("bare WAMR AOT file"),
        "{}",
        r.text()
    );

    for id in [
        "profile",
        "previous",
        "model",
        "feature",
        "bytecode",
        "garbage",
        "lie",
        "lie-deeper",
        "bare",
    ] {
        ex.run(id, json!({})).expect(404);
    }
    healthy(&ex);
    ex.init_code("good", &artifact, json!({})).expect(200);
    assert_eq!(
        ex.run("good", json!({"param1": 1, "param2": 2}))
            .expect(200)
            .json(),
        json!({"result": 3})
    );
}

#[test]
fn artifacts_for_cpu_features_the_machine_lacks_are_refused_not_run() {
    // The executor on an emulated CPU of the portable baseline that lacks optional features
    // (qemu-user from scripts/prerequisites.sh): x86-64-v2 without AVX, Armv8.0-A without LSE.
    let (emulator, model, lacked) = match std::env::consts::ARCH {
        "x86_64" => ("qemu-x86_64-static", "Westmere", "avx2"),
        "aarch64" => ("qemu-aarch64-static", "cortex-a53", "lse"),
        // 32-bit ARM code gets no optional features: there is nothing to lack.
        _ => return,
    };
    let dir = ScratchDir::new("wamr-lacking");
    let add = AddParts::new(&dir);
    let target = add.target;
    // Code compiled with every optional feature, as `--native-cpu` writes it on a machine
    // that has them all. WAMR's loader would load it, and the executor would die of SIGILL at
    // the first such instruction.
    let everything = CodeCpu::with_optional(target.cpu, |_| true);
    let tag = wamr_profile::tag(RuntimeId::Wamr.locked_version(), target, &everything);
    let artifact = add.artifact(wamr_profile::wrap(&tag, &add.aot));
    let ex = Executor::start_launched(&[emulator, "-cpu", model], &["--allow-unsigned-artifacts"]);
    let r = ex.init_code("lacking", &artifact, json!({}));
    let error = r.expect(502).error();
    assert!(
        error.contains("CPU features this machine lacks (") && error.contains(lacked),
        "{error}"
    );
    ex.run("lacking", json!({})).expect(404);
    // The emulated executor goes on serving.
    ex.init_action("interp", "add");
    assert_eq!(
        ex.run("interp", json!({"param1": 1, "param2": 2}))
            .expect(200)
            .json(),
        json!({"result": 3})
    );
}

#[test]
fn out_of_bounds_accesses_trap_in_every_tier_and_growth_is_usable() {
    let dir = ScratchDir::new("wamr-oob");
    let ex = trusting();
    let modules = [
        // Just past the end of the one page.
        (
            "edge",
            command("(i32.store (i32.const 65536) (i32.const 1))", ""),
        ),
        // The farthest a 32-bit address plus offset reaches, deep in the guard region.
        (
            "far",
            command(
                "(i32.store offset=4294967295 (i32.const -1) (i32.const 1))",
                "",
            ),
        ),
        // A load that straddles the end (its value used: with guard pages a load whose value
        // is never used may be optimised away by the AOT compiler, and then cannot fault).
        (
            "straddle",
            command(
                "(i64.store (i32.const 512) (i64.load (i32.const 65532)))",
                "",
            ),
        ),
        // A bulk fill running past the end.
        (
            "fill",
            command(
                "(memory.fill (i32.const 65000) (i32.const 7) (i32.const 1000))",
                "",
            ),
        ),
    ];
    for (name, wasm) in &modules {
        for (tier, code) in every_tier(wasm, &dir) {
            let id = format!("{name}-{tier}");
            ex.init_code(&id, &code, json!({})).expect(200);
            let r = ex.run(&id, json!({}));
            assert_eq!(r.status, 502, "{id}: {}", r.text());
            let error = r.error();
            assert!(
                error.contains("trapped") && error.contains("out of bounds"),
                "{id}: {error}"
            );
            healthy(&ex);
        }
    }
    // Pages added by memory.grow are accessible right up to the new end, and not beyond.
    let grown = command(
        "(drop (memory.grow (i32.const 1))) (i32.store (i32.const 131068) (i32.const 1))",
        "",
    );
    let beyond = command(
        "(drop (memory.grow (i32.const 1))) (i32.store (i32.const 131070) (i32.const 1))",
        "",
    );
    for (tier, code) in every_tier(&grown, &dir) {
        ex.init_code(&format!("grown-{tier}"), &code, json!({}))
            .expect(200);
        assert_eq!(
            ex.run(&format!("grown-{tier}"), json!({}))
                .expect(200)
                .json(),
            json!({"ok": true})
        );
    }
    for (tier, code) in every_tier(&beyond, &dir) {
        ex.init_code(&format!("beyond-{tier}"), &code, json!({}))
            .expect(200);
        assert!(
            ex.run(&format!("beyond-{tier}"), json!({}))
                .expect(502)
                .error()
                .contains("out of bounds")
        );
    }
}

#[test]
fn runaway_recursion_traps_in_every_tier() {
    let dir = ScratchDir::new("wamr-stack");
    let wasm = command(
        "(drop (call $down (i64.const 0)))",
        "(func $down (param i64) (result i64) (i64.add (call $down (i64.add (local.get 0) (i64.const 1))) (local.get 0)))",
    );
    let ex = trusting();
    for (tier, code) in every_tier(&wasm, &dir) {
        ex.init_code(tier, &code, json!({})).expect(200);
        for _ in 0..2 {
            let error = ex.run(tier, json!({})).expect(502).error();
            assert!(
                error.contains("trapped") && error.contains("stack overflow"),
                "{tier}: {error}"
            );
        }
        healthy(&ex);
    }
    ex.init_action("add", "add");
    ex.run("add", json!({"param1": 1, "param2": 1})).expect(200);
}

/// A module with a C/Rust-style shadow stack (a mutable stack-pointer global between
/// `__data_end` and `__heap_base`, 1 MiB) whose `_start` recurses `depth` times, taking 1 KiB of
/// it per call.
fn shadow_stack_module(depth: u32) -> Vec<u8> {
    command_with_pages(
        17,
        &format!("(call $rec (i32.const {depth}))"),
        r#"(global $sp (mut i32) (i32.const 1049600))
           (export "__data_end" (global $data_end))
           (export "__heap_base" (global $heap_base))
           (global $data_end i32 (i32.const 1024))
           (global $heap_base i32 (i32.const 1049600))
           (func $rec (param $depth i32)
             (global.set $sp (i32.sub (global.get $sp) (i32.const 1024)))
             (i32.store (global.get $sp) (local.get $depth))
             (if (local.get $depth) (then (call $rec (i32.sub (local.get $depth) (i32.const 1)))))
             (global.set $sp (i32.add (global.get $sp) (i32.const 1024))))"#,
    )
}

#[test]
fn the_shadow_stack_is_the_guests_whole_and_checked() {
    let dir = ScratchDir::new("wamr-shadow");
    let ex = trusting();
    // 600 KiB of a 1 MiB shadow stack: the whole stack belongs to the one guest thread.
    for (tier, code) in every_tier(&shadow_stack_module(600), &dir) {
        ex.init_code(
            &format!("fits-{tier}"),
            &code,
            json!({"limits": {"memory": 64}}),
        )
        .expect(200);
        assert_eq!(
            ex.run(&format!("fits-{tier}"), json!({}))
                .expect(200)
                .json(),
            json!({"ok": true}),
            "{tier}"
        );
    }
    // Beyond it, a trap rather than writes below the stack.
    for (tier, code) in every_tier(&shadow_stack_module(1100), &dir) {
        ex.init_code(
            &format!("over-{tier}"),
            &code,
            json!({"limits": {"memory": 64}}),
        )
        .expect(200);
        let error = ex
            .run(&format!("over-{tier}"), json!({}))
            .expect(502)
            .error();
        assert!(
            error.contains("auxiliary stack overflow"),
            "{tier}: {error}"
        );
    }
}

#[test]
fn start_functions_are_refused_by_executor_and_precompiler() {
    let dir = ScratchDir::new("wamr-start");
    let wasm = wat::parse_str(
        r#"(module (memory (export "memory") 1)
             (func $spin (loop $l (br $l))) (start $spin)
             (func (export "_start")))"#,
    )
    .unwrap();
    let ex = Executor::start();
    let r = ex.init_code("start", &wasm, json!({}));
    assert!(
        r.expect(502).error().contains("start function"),
        "{}",
        r.text()
    );
    let error = try_precompile(&wasm, &host_target(), &dir).unwrap_err();
    assert!(error.contains("start function"), "{error}");
    // So is an export WAMR would run while instantiating.
    let init = wat::parse_str(
        r#"(module (memory (export "memory") 1)
             (func (export "_initialize") (loop $l (br $l)))
             (func (export "_start")))"#,
    )
    .unwrap();
    assert!(
        ex.init_code("init", &init, json!({}))
            .expect(502)
            .error()
            .contains("_initialize")
    );
}

#[test]
fn memory_limits_hold_for_initial_memory_and_for_artifacts() {
    let dir = ScratchDir::new("wamr-mem");
    let ex = trusting();
    // 2048 pages (128 MiB) of initial memory under a 64 MiB limit.
    let big =
        wat::parse_str(r#"(module (memory (export "memory") 2048) (func (export "_start")))"#)
            .unwrap();
    for (tier, code) in every_tier(&big, &dir) {
        ex.init_code(tier, &code, json!({"limits": {"memory": 64}}))
            .expect(200);
        assert_eq!(
            ex.run(tier, json!({})).expect(502).error(),
            "The action exhausted its memory and was aborted."
        );
    }
    let hog = precompile(&action("memhog"), &host_target(), &dir);
    ex.init_code("hog", &hog, json!({"limits": {"memory": 64}}))
        .expect(200);
    assert_eq!(
        ex.run("hog", json!({"mb": 128})).expect(502).error(),
        "The action exhausted its memory and was aborted."
    );
    assert_eq!(
        ex.run("hog", json!({"mb": 16})).expect(200).json()["allocated_mb"],
        16
    );
}

/// Runs `/id/run` with `params` and a deadline `ms` from now; status, body, duration.
fn run_with_deadline(ex: &Executor, id: &str, params: Value, ms: u64) -> (u16, Value, Duration) {
    let body = json!({"value": params, "deadline": deadline_in(ms)});
    let started = Instant::now();
    let r = ex.post(&format!("/{id}/run"), &body.to_string());
    (r.status, r.json(), started.elapsed())
}

#[test]
fn many_looping_guests_stop_at_their_deadlines_while_others_are_served() {
    let dir = ScratchDir::new("wamr-load");
    let ex = Arc::new(Executor::start_with(&[
        "--allow-unsigned-artifacts",
        "--pool-threads",
        "10",
        "--max-concurrent",
        "10",
    ]));
    let loop_wasm = action("loop");
    let mut ids = Vec::new();
    for (tier, code) in every_tier(&loop_wasm, &dir) {
        let id = format!("loop-{tier}");
        ex.init_code(&id, &code, json!({})).expect(200);
        ids.push(id);
    }
    ex.init_action("add", "add");

    const DEADLINE_MS: u64 = 3000;
    // Pure compute loops and clock-polling busy waits, in every tier (each tier gets both
    // kinds): 8 guests at once on 2 cores, so the watchdog works while the machine is saturated.
    let tiers = ids.len();
    let loops: Vec<_> = (0..8)
        .map(|i| {
            let ex = Arc::clone(&ex);
            let id = ids[i % tiers].clone();
            std::thread::spawn(move || {
                let params = if (i / tiers) % 2 == 0 {
                    json!({"forever": true})
                } else {
                    json!({"ms": 600_000})
                };
                let outcome = run_with_deadline(&ex, &id, params, DEADLINE_MS);
                (id, outcome)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // Other containers are served while the eight loop: five activations complete meanwhile.
    for _ in 0..5 {
        ex.run("add", json!({"param1": 1, "param2": 1})).expect(200);
    }
    assert!(
        loops.iter().all(|l| !l.is_finished()),
        "the other container was served while the guests looped, not after"
    );
    for handle in loops {
        let (id, (status, body, took)) = handle.join().unwrap();
        assert_eq!(status, 502, "{id}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("exceeded its time limit"),
            "{id}: {body}"
        );
        ex.assert_stopped_on_time(took, Duration::from_millis(DEADLINE_MS), &id);
    }
    // Every worker is free again.
    for id in &ids {
        assert_eq!(ex.run(id, json!({})).expect(200).json()["ok"], true);
    }
    let metrics = ex.get("/metrics").text();
    assert!(
        metrics.contains(r#"wasm_executor_activations_total{outcome="timeout"} 8"#),
        "{metrics}"
    );
}

/// The natives registered over WASI's own (`fd_write`, `poll_oneoff`) hand what they do not
/// handle themselves to WAMR's implementation, from interpreted and AOT code alike (AOT code
/// calls WASI natives directly, without the attachment the interpreter passes): a write to a
/// descriptor that is not open is `EBADF`, a 10 ms sleep returns its one event.
#[test]
fn wasi_overrides_delegate_to_wamr_from_every_tier() {
    let wasm = command(
        r#"(if (i32.ne (call $fd_write (i32.const 9) (i32.const 0) (i32.const 0) (i32.const 8))
                       (i32.const 8))                        ;; EBADF
             (then unreachable))
           (i64.store (i32.const 2048) (i64.const 1))          ;; userdata
           (i32.store8 (i32.const 2056) (i32.const 0))          ;; tag: clock
           (i32.store (i32.const 2064) (i32.const 1))           ;; clock id: monotonic
           (i64.store (i32.const 2072) (i64.const 10000000))    ;; timeout, ns
           (i64.store (i32.const 2080) (i64.const 0))           ;; precision
           (i32.store16 (i32.const 2088) (i32.const 0))         ;; flags: relative
           (if (i32.ne (call $poll (i32.const 2048) (i32.const 3072) (i32.const 1) (i32.const 4096))
                       (i32.const 0))
             (then unreachable))
           (if (i32.ne (i32.load (i32.const 4096)) (i32.const 1))
             (then unreachable))"#,
        r#"(import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))"#,
    );
    let dir = ScratchDir::new("wamr-delegate");
    let ex = trusting();
    for (tier, code) in every_tier(&wasm, &dir) {
        ex.init_code(tier, &code, json!({})).expect(200);
        let r = ex.run(tier, json!({}));
        assert_eq!(r.expect(200).json(), json!({"ok": true}), "{tier}");
    }
    healthy(&ex);
}

#[test]
fn a_guest_sleeping_in_wasi_is_stopped_at_its_deadline() {
    // poll_oneoff on one relative clock subscription of 60 s: the guest blocks in the host.
    let wasm = command(
        r#"(i64.store (i32.const 2048) (i64.const 1))          ;; userdata
           (i32.store8 (i32.const 2056) (i32.const 0))          ;; tag: clock
           (i32.store (i32.const 2064) (i32.const 1))           ;; clock id: monotonic
           (i64.store (i32.const 2072) (i64.const 60000000000)) ;; timeout, ns
           (i64.store (i32.const 2080) (i64.const 0))           ;; precision
           (i32.store16 (i32.const 2088) (i32.const 0))         ;; flags: relative
           (drop (call $poll (i32.const 2048) (i32.const 3072) (i32.const 1) (i32.const 4096)))"#,
        r#"(import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))"#,
    );
    let dir = ScratchDir::new("wamr-sleep");
    let ex = trusting();
    for (tier, code) in every_tier(&wasm, &dir) {
        ex.init_code(tier, &code, json!({})).expect(200);
        let (status, body, took) = run_with_deadline(&ex, tier, json!({}), 700);
        assert_eq!(status, 502, "{tier}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("exceeded its time limit"),
            "{tier}: {body}"
        );
        ex.assert_stopped_on_time(took, Duration::from_millis(700), tier);
    }
}

/// Bytes of the executor's anonymous executable mappings, and whether any mapping of its is
/// writable and executable at once.
fn executable_anonymous_bytes(ex: &Executor) -> (u64, bool) {
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", ex.pid())).unwrap();
    let mut bytes = 0;
    let mut writable_and_executable = false;
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (range, perms) = (fields[0], fields[1]);
        writable_and_executable |= perms.contains('w') && perms.contains('x');
        let anonymous = fields.len() < 6;
        if anonymous && perms.contains('x') {
            let (start, end) = range.split_once('-').unwrap();
            bytes +=
                u64::from_str_radix(end, 16).unwrap() - u64::from_str_radix(start, 16).unwrap();
        }
    }
    (bytes, writable_and_executable)
}

/// AOT code that executes in place (`--xip`) runs from pages of its own that hold the AOT file,
/// read-only and executable, gives the interpreter's results, and its pages go with the module.
/// Executable bytes are counted, not mappings: the kernel merges neighbouring mappings of the
/// same kind (WAMR's own code copies are anonymous read-only code too).
#[test]
fn code_executing_in_place_runs_from_a_mapping_of_its_own() {
    let dir = ScratchDir::new("wamr-xip");
    let ex = trusting();
    let wasm = action("hash");
    let params = json!({"iterations": 3000, "input": "in place"});
    ex.init_action("interp", "hash");
    let interp = ex.run("interp", params.clone()).expect(200).json();

    let xip = precompile_xip(&wasm, &dir);
    let target = wamr_profile::TargetProfile::this_machine().unwrap();
    let profile = wamr_profile::profile_tag(RuntimeId::Wamr.locked_version(), target);
    let payload = Envelope::parse(&xip).unwrap().payload.into_owned();
    let (aot, _) = wamr_profile::unwrap(&profile, target.cpu, |_| true, &payload).unwrap();
    let page: u64 = String::from_utf8(
        Command::new("getconf")
            .arg("PAGESIZE")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    let file_pages = (aot.len() as u64).div_ceil(page) * page;

    let (before, wx) = executable_anonymous_bytes(&ex);
    assert!(
        !wx,
        "a mapping is writable and executable before any AOT code"
    );
    ex.init_code("xip", &xip, json!({})).expect(200);
    let (with_xip, wx) = executable_anonymous_bytes(&ex);
    assert_eq!(
        with_xip - before,
        file_pages,
        "code that executes in place takes the AOT file's pages, once"
    );
    assert!(!wx, "the pages were sealed after the load");
    assert_eq!(ex.run("xip", params.clone()).expect(200).json(), interp);

    // Code WAMR copies takes executable memory of WAMR's own, also never writable.
    ex.init_code("aot", &precompile(&wasm, &host_target(), &dir), json!({}))
        .expect(200);
    let (with_both, wx) = executable_anonymous_bytes(&ex);
    assert!(with_both > with_xip, "WAMR copied the default AOT code");
    assert!(!wx, "WAMR's own code copy is not writable once loaded");
    assert_eq!(ex.run("aot", params.clone()).expect(200).json(), interp);

    // The last container of the module goes, and its pages with it.
    ex.post("/xip/destroy", "").expect(200);
    let (after, _) = executable_anonymous_bytes(&ex);
    assert_eq!(with_both - after, file_pages, "the pages were unmapped");
    healthy(&ex);
    assert_eq!(ex.run("aot", params).expect(200).json(), interp);
}

/// A language engine with the AOT code `wasm-precompile-wamr --engine` made of it lying beside it
/// (`scripts/engine-artifacts.sh`, under the precompiler's name for it) runs as that code: the
/// executor maps it executable. An artifact that does not fit the engine (here the Python
/// engine's under the JavaScript engine's name) is passed over and the engine interpreted, with
/// the same results.
#[test]
fn an_engine_runs_as_the_aot_code_beside_it_and_code_that_does_not_fit_is_passed_over() {
    let engine = harness::js_engine();
    let arch = host_target().split('-').next().unwrap().to_owned();
    let beside = |name: &str| engine.with_file_name(format!("{name}.wamr-{arch}.owart"));
    for name in ["quickjs", "python"] {
        assert!(
            beside(name).is_file(),
            "{} is missing: scripts/engine-artifacts.sh makes it",
            beside(name).display()
        );
    }
    let fitting = ScratchDir::new("wamr-engine-aot");
    let other = ScratchDir::new("wamr-engine-other");
    for (dir, artifact) in [(&fitting, beside("quickjs")), (&other, beside("python"))] {
        std::fs::copy(&engine, dir.0.join("quickjs.wasm")).unwrap();
        std::fs::copy(&artifact, dir.0.join(format!("quickjs.wamr-{arch}.owart"))).unwrap();
    }
    let source = "const table = Array.from({ length: 50 }, (_, i) => i * i);\n\
                  function main(p) { return { sum: table.reduce((a, b) => a + b, 0) + p.x }; }";
    let init = json!({ "kind": "nodejs:20", "code": source, "binary": false, "main": "main" });
    let mut executable = Vec::new();
    for dir in [&fitting, &other] {
        let engine = dir.0.join("quickjs.wasm");
        let ex = Executor::start_with(&["--js-engine", engine.to_str().unwrap()]);
        ex.init("js", init.clone()).expect(200);
        assert_eq!(
            ex.run("js", json!({"x": 1})).expect(200).json(),
            json!({"sum": 40426})
        );
        let (bytes, wx) = executable_anonymous_bytes(&ex);
        assert!(!wx, "no mapping is writable and executable at once");
        executable.push(bytes);
        ex.assert_healthy();
    }
    let aot_code = Envelope::parse(&std::fs::read(beside("quickjs")).unwrap())
        .unwrap()
        .payload
        .len() as u64;
    assert!(
        executable[0] >= aot_code / 2 && executable[1] + aot_code / 2 <= executable[0],
        "executable anonymous bytes with the engine's AOT code {} and with code that does not fit it {}, the code {aot_code} bytes",
        executable[0],
        executable[1]
    );
}

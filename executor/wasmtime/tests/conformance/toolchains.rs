//! Modules as today's compilers emit them run on every backend, portable and precompiled:
//! rustc and clang (LLVM 19 and later) turn on reference types, multi-value, bulk memory, sign
//! extension, non-trapping float-to-int and mutable globals by default, and pad the table
//! index of every `call_indirect` to five bytes. A fixture uses each of these on purpose, so
//! the test does not depend on which compiler version built the example actions.

use serde_json::json;

use crate::harness::{Executor, ScratchDir, action, executor_target, precompile};

/// A WASI command that checks one feature per step and prints `{"features":"ok"}`, or
/// `{"failed":N}` for the first step N that computed something else.
const FEATURES_WAT: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (type $binop (func (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table $first 2 funcref)
  (table $second 2 funcref)
  (elem (table $first) (i32.const 0) func $add $sub)
  (elem (table $second) (i32.const 0) func $sub $sub)
  (data (i32.const 1024) "{\"features\":\"ok\"}\n")
  (data (i32.const 1100) "{\"failed\":0}\n")
  (data $passive "wasm")
  (global $failed (mut i32) (i32.const 0))
  (global $counter (export "counter") (mut i64) (i64.const 0))
  (func $add (type $binop) (i32.add (local.get 0) (local.get 1)))
  (func $sub (type $binop) (i32.sub (local.get 0) (local.get 1)))
  ;; multi-value: two results
  (func $divmod (param i32 i32) (result i32 i32)
    (i32.div_u (local.get 0) (local.get 1))
    (i32.rem_u (local.get 0) (local.get 1)))
  ;; records step $n as failed unless $ok (the first failure wins)
  (func $check (param $ok i32) (param $n i32)
    (if (i32.and (i32.eqz (local.get $ok)) (i32.eqz (global.get $failed)))
      (then
        (global.set $failed (local.get $n))
        (i32.store8 (i32.const 1110) (i32.add (i32.const 48) (local.get $n))))))
  (func $print (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start")
    (local $q i32) (local $r i32)
    ;; 1: multi-value call
    (call $divmod (i32.const 17) (i32.const 5))
    (local.set $r)
    (local.set $q)
    (call $check (i32.and (i32.eq (local.get $q) (i32.const 3)) (i32.eq (local.get $r) (i32.const 2))) (i32.const 1))
    ;; 2: call_indirect through table 0; its table index is padded below (the four nops)
    i32.const 7
    i32.const 2
    i32.const 1
    call_indirect $first (type $binop)
    nop nop nop nop
    i32.const 5
    i32.eq
    i32.const 2
    call $check
    ;; 3: call_indirect through a second table
    (call $check (i32.eq (call_indirect $second (type $binop) (i32.const 7) (i32.const 2) (i32.const 0)) (i32.const 5)) (i32.const 3))
    ;; 4: reference types: ref.func, table.set, table.get, ref.is_null, table.size
    (table.set $second (i32.const 1) (ref.func $add))
    (call $check (i32.eq (call_indirect $second (type $binop) (i32.const 7) (i32.const 2) (i32.const 1)) (i32.const 9)) (i32.const 4))
    (call $check (i32.eqz (ref.is_null (table.get $first (i32.const 1)))) (i32.const 4))
    (call $check (i32.eq (table.size $second) (i32.const 2)) (i32.const 4))
    ;; 5: bulk memory: memory.init, data.drop, memory.copy, memory.fill
    (memory.init $passive (i32.const 2000) (i32.const 0) (i32.const 4))
    (data.drop $passive)
    (memory.copy (i32.const 2004) (i32.const 2000) (i32.const 4))
    (memory.fill (i32.const 2008) (i32.const 0x21) (i32.const 2))
    (call $check (i32.eq (i32.load (i32.const 2004)) (i32.const 0x6d736177)) (i32.const 5))
    (call $check (i32.eq (i32.load16_u (i32.const 2008)) (i32.const 0x2121)) (i32.const 5))
    ;; 6: sign extension
    (call $check (i32.eq (i32.extend8_s (i32.const 0xff)) (i32.const -1)) (i32.const 6))
    (call $check (i64.eq (i64.extend32_s (i64.const 0x80000000)) (i64.const -2147483648)) (i32.const 6))
    ;; 7: non-trapping float-to-int
    (call $check (i32.eq (i32.trunc_sat_f64_s (f64.const 1e20)) (i32.const 2147483647)) (i32.const 7))
    (call $check (i32.eqz (i32.trunc_sat_f32_u (f32.const nan))) (i32.const 7))
    ;; 8: a mutable global, exported
    (global.set $counter (i64.add (global.get $counter) (i64.const 41)))
    (call $check (i64.eq (global.get $counter) (i64.const 41)) (i32.const 8))
    ;; 9: a block with parameters (multi-value)
    i32.const 4
    i32.const 5
    block (param i32 i32) (result i32)
      i32.add
    end
    i32.const 9
    i32.eq
    i32.const 9
    call $check
    (if (global.get $failed)
      (then (call $print (i32.const 1100) (i32.const 13)))
      (else (call $print (i32.const 1024) (i32.const 18)))))
)"#;

/// The feature fixture with the one `call_indirect` through table 0 encoded as LLVM writes
/// it: `0x11 type 0x80 0x80 0x80 0x80 0x00` (the four nops after it make room, so no size
/// changes).
fn features_module() -> Vec<u8> {
    let mut wasm = wat::parse_str(FEATURES_WAT).expect("valid WAT fixture");
    // call_indirect (opcode 0x11), type index 0, table 0, then four nops (0x01).
    let plain = [0x11, 0x00, 0x00, 0x01, 0x01, 0x01, 0x01];
    let found: Vec<usize> = wasm
        .windows(plain.len())
        .enumerate()
        .filter(|(_, w)| *w == plain)
        .map(|(at, _)| at)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "the padded call_indirect site in the fixture"
    );
    wasm[found[0] + 2..found[0] + 7].copy_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x00]);
    wasm
}

#[test]
fn every_feature_of_todays_compilers_runs_portable_and_precompiled() {
    let dir = ScratchDir::new("toolchains");
    let ex = Executor::start_with(&["--allow-unsigned-artifacts"]);
    let module = features_module();
    ex.init_code("portable", &module, json!({})).expect(200);
    assert_eq!(
        ex.run("portable", json!({})).expect(200).json(),
        json!({"features": "ok"})
    );
    let artifact = precompile(
        &module,
        &executor_target(),
        None,
        &dir.0.join("features.zip"),
    );
    ex.init_code("precompiled", &artifact, json!({}))
        .expect(200);
    assert_eq!(
        ex.run("precompiled", json!({})).expect(200).json(),
        json!({"features": "ok"})
    );
}

#[test]
fn rust_and_c_actions_as_built_precompile_and_run() {
    let dir = ScratchDir::new("toolchains");
    let ex = Executor::start_with(&["--allow-unsigned-artifacts"]);
    // `big` calls through a table of 750 functions (LLVM's padded call_indirect, many times);
    // `wordcount` is C from clang.
    let cases = [
        ("big", json!({"rounds": 100, "seed": 7})),
        ("echo", json!({"greeting": "hi", "n": [1, 2]})),
        ("wordcount", json!({"text": "padded table indices"})),
    ];
    for (name, params) in cases {
        ex.init_action(&format!("{name}-portable"), name);
        let portable = ex
            .run(&format!("{name}-portable"), params.clone())
            .expect(200)
            .json();
        let artifact = precompile(
            &action(name),
            &executor_target(),
            None,
            &dir.0.join(format!("{name}.zip")),
        );
        ex.init_code(&format!("{name}-precompiled"), &artifact, json!({}))
            .expect(200);
        let precompiled = ex
            .run(&format!("{name}-precompiled"), params)
            .expect(200)
            .json();
        assert_eq!(portable, precompiled, "{name}: the same result both ways");
    }
    assert_eq!(
        ex.run("wordcount-portable", json!({"text": "a b c"}))
            .expect(200)
            .json()["words"],
        3
    );
}

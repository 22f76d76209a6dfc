//! What the benchmark sends: /init bodies for modules (portable, precompiled zips, tiny WAT
//! modules) and /run bodies, built once so the timed loops only write bytes.

use std::path::Path;

use anyhow::Context;
use base64::Engine as _;
use serde_json::json;

/// A `_start` that returns at once: the smallest guest with a linear memory. The executor
/// answers 502 "did not return a dictionary", after a complete fresh-instance run.
pub const EMPTY_WAT: &str = r#"(module
  (memory (export "memory") 1)
  (func (export "_start")))"#;

/// A `_start` that writes `{}` with one `fd_write` and returns: the smallest guest with a
/// successful OpenWhisk result.
pub const WRITE_WAT: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{}\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 3))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;

/// The binary module for WAT text.
pub fn wat_module(text: &str) -> anyhow::Result<Vec<u8>> {
    wat::parse_str(text).context("assembling a WAT module")
}

pub fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// The /init body OpenWhisk sends for a binary action whose code is `code` (a zip or module).
pub fn init_body(code: &[u8]) -> Vec<u8> {
    let code = base64::engine::general_purpose::STANDARD.encode(code);
    let body = json!({"value": {"name": "bench", "main": "main", "binary": true, "code": code}});
    serde_json::to_vec(&body).expect("JSON values serialize")
}

/// The /run body with `params` as the action's parameters.
pub fn run_body(params: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&json!({ "value": params })).expect("JSON values serialize")
}

/// The body of a no-op activation: `{"value": {}}`.
pub fn noop_run_body() -> Vec<u8> {
    run_body(&json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wat_modules_assemble() {
        assert!(wat_module(EMPTY_WAT).unwrap().starts_with(b"\0asm"));
        assert!(wat_module(WRITE_WAT).unwrap().starts_with(b"\0asm"));
    }
}

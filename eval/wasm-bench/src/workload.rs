//! What the benchmark sends: /init bodies for modules (portable or precompiled zips) and /run
//! bodies, built once so the timed loops only write bytes.

use std::path::Path;

use anyhow::Context;
use base64::Engine as _;
use serde_json::json;

pub fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// The /init body OpenWhisk sends for a binary action whose code is `code` (a zip or module).
pub fn init_body(code: &[u8]) -> Vec<u8> {
    let code = base64::engine::general_purpose::STANDARD.encode(code);
    let body = json!({"value": {"name": "bench", "main": "main", "binary": true, "code": code}});
    serde_json::to_vec(&body).expect("JSON values serialize")
}

/// `wasm` with a custom section that holds `k`: the same program as different code, so that
/// every `k` is a distinct action to the executor (its own upload, its own module).
pub fn distinct(wasm: &[u8], k: u64) -> Vec<u8> {
    const NAME: &[u8] = b"owwasm-distinct";
    let mut payload = vec![NAME.len() as u8];
    payload.extend_from_slice(NAME);
    payload.extend_from_slice(&k.to_le_bytes());
    let mut out = wasm.to_vec();
    out.push(0); // custom section
    let mut size = payload.len();
    loop {
        let byte = (size & 0x7f) as u8;
        size >>= 7;
        out.push(if size == 0 { byte } else { byte | 0x80 });
        if size == 0 {
            break;
        }
    }
    out.extend_from_slice(&payload);
    out
}

/// The /run body with `params` as the action's parameters.
pub fn run_body(params: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&json!({ "value": params })).expect("JSON values serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_modules_differ_by_one_custom_section() {
        let module = wat::parse_str("(module (func (export \"_start\")))").unwrap();
        let (a, b) = (distinct(&module, 1), distinct(&module, 2));
        assert_ne!(a, b);
        // Section id 0, size 24 (name length, 15 bytes of name, 8 of payload), then those.
        assert_eq!(&a[..module.len()], &module[..]);
        assert_eq!(&a[module.len()..module.len() + 3], &[0, 24, 15]);
        assert_eq!(&a[module.len() + 3..module.len() + 18], b"owwasm-distinct");
        assert_eq!(&a[module.len() + 18..], &1u64.to_le_bytes());
    }
}

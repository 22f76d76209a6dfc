//! `random`: `{"bytes": 16}` → `{"hex": "…"}` from WASI `random_get` (natively
//! `/dev/urandom`).

use openwhisk::{Error, Value, error, json, params};

const MAX_BYTES: u64 = 1 << 20;

fn random(p: Value) -> Result<Value, Error> {
    let n = params::u64_or(&p, "bytes", 16)?;
    if n > MAX_BYTES {
        return Err(error!("bytes must be at most {MAX_BYTES}"));
    }
    let mut buf = vec![0u8; n as usize];
    openwhisk::random::fill(&mut buf)?;
    let hex: String = buf.iter().map(|b| format!("{b:02x}")).collect();
    Ok(json!({ "hex": hex }))
}

openwhisk::main!(random);

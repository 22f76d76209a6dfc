//! `loop`: `{"forever": true}` spins forever (to test timeouts); `{"ms": N}` busy-waits N ms;
//! otherwise → `{"ok": true}`.

use openwhisk::{Error, Value, json, params};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn spin(p: Value) -> Result<Value, Error> {
    if params::bool_or(&p, "forever", false)? {
        let mut i = 0u64;
        loop {
            i = black_box(i.wrapping_add(1));
        }
    }
    let ms = params::u64_or(&p, "ms", 0)?;
    if ms > 0 {
        let until = Instant::now() + Duration::from_millis(ms);
        let mut i = 0u64;
        while Instant::now() < until {
            i = black_box(i.wrapping_add(1));
        }
        return Ok(json!({ "ok": true, "ms": ms, "spins": i }));
    }
    Ok(json!({ "ok": true }))
}

openwhisk::main!(spin);

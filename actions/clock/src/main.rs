//! `clock`: wall-clock time and a monotonic measurement of a short busy loop →
//! `{"epoch_ms": …, "elapsed_ns": …, "spins": …}`.

use openwhisk::{Error, Value, error, json, params};
use std::hint::black_box;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const DEFAULT_SPINS: u64 = 100_000;

fn clock(p: Value) -> Result<Value, Error> {
    let spins = params::u64_or(&p, "spins", DEFAULT_SPINS)?;
    let epoch_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| error!("clock before 1970: {e}"))?
        .as_millis();
    let start = Instant::now();
    let mut acc = 0u64;
    for i in 0..spins {
        acc = black_box(acc.wrapping_mul(31).wrapping_add(i));
    }
    let elapsed_ns = start.elapsed().as_nanos();
    black_box(acc);
    Ok(json!({
        "epoch_ms": u64::try_from(epoch_ms).unwrap_or(u64::MAX),
        "elapsed_ns": u64::try_from(elapsed_ns).unwrap_or(u64::MAX),
        "spins": spins,
    }))
}

openwhisk::main!(clock);

//! `memhog`: allocates `{"mb": N}` MiB in 1 MiB chunks, touching every page →
//! `{"allocated_mb": N}`. Beyond the memory limit the allocation fails and the module traps.

use openwhisk::{Error, Value, json, params};
use std::hint::black_box;

const MIB: usize = 1 << 20;
const PAGE: usize = 4096;

fn memhog(p: Value) -> Result<Value, Error> {
    let mb = params::u64_or(&p, "mb", 16)?;
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    for i in 0..mb {
        let mut chunk = vec![0u8; MIB];
        for offset in (0..MIB).step_by(PAGE) {
            chunk[offset] = (i as u8) | 1;
        }
        chunks.push(black_box(chunk));
    }
    let touched: u64 = chunks.iter().map(|c| u64::from(c[0] & 1)).sum();
    black_box(&chunks);
    Ok(json!({ "allocated_mb": mb, "touched_mb": touched }))
}

openwhisk::main!(memhog);

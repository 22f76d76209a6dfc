//! `big`: a deliberately large module (~300 KB) of realistic shape for the evaluation: a
//! thousand generated mixing functions called through a function table, plus a lookup table.
//!
//! `{"rounds": R, "seed": S}` (defaults 10 000 and 1) → `{"checksum": "<hex>", "rounds": R,
//! "functions": F}`; each round calls the function the current state selects.

use openwhisk::{Error, Value, json, params};

mod generated {
    #![allow(unused, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/generated.rs"));
}

fn checksum(seed: u64, rounds: u64) -> u64 {
    let funcs = &generated::FUNCS;
    let mut x = seed;
    for _ in 0..rounds {
        let f = funcs[(x % funcs.len() as u64) as usize];
        x = f(x, &generated::TABLE) ^ (x >> 7);
    }
    x
}

fn big(p: Value) -> Result<Value, Error> {
    let rounds = params::u64_or(&p, "rounds", 10_000)?;
    let seed = params::u64_or(&p, "seed", 1)?;
    Ok(json!({
        "checksum": format!("{:016x}", checksum(seed, rounds)),
        "rounds": rounds,
        "functions": generated::FUNCS.len(),
    }))
}

openwhisk::main!(big);

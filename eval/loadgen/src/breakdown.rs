//! Where /init time goes before the runtime sees the module: the host-side steps the executor
//! performs on an /init body — JSON parse, decoding (base64, zip, envelope framing; the module
//! hash for portable Wasm) and verification (signature and payload hash) — run in this process
//! on the same bytes through the executor's own decoder (`executor/src/code.rs`, compiled in
//! here). The executor logs the same steps per load (`module loaded … decode_us verify_us
//! load_us`); what remains of its /init time is the runtime's part and the pool hand-off.

use std::{path::Path, time::Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use wasm_artifact::{RuntimeId, TrustedKeys, host_target};

#[path = "../../../executor/src/code.rs"]
#[allow(
    dead_code,
    reason = "the executor's decoder, compiled in whole; the breakdown reads only what it times"
)]
mod code;

use code::ModuleCode;

/// The largest module the executor accepts by default (`--max-module-mb 32`).
const MAX_MODULE_BYTES: usize = 32 << 20;

/// Median time of each step, in µs.
#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    pub repetitions: u64,
    pub precompiled: Vec<Step>,
    pub portable: Vec<Step>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub step: &'static str,
    pub median_us: f64,
    /// Whether the executor's own init duration (`took_us` in its log) includes this step;
    /// the JSON parse happens before it starts.
    pub in_server_time: bool,
}

#[derive(Deserialize)]
struct InitBody {
    value: InitValue,
}

#[derive(Deserialize)]
struct InitValue {
    code: String,
}

pub fn measure(
    precompiled_body: &[u8],
    portable_body: &[u8],
    public_key: &Path,
    reps: u64,
) -> anyhow::Result<Breakdown> {
    let keys = TrustedKeys::load(&[public_key]).context("loading the operator key")?;
    let target = host_target();
    let reps = reps.max(1);

    let mut pre = Vec::new();
    let text = median(&mut pre, "json_parse", false, reps, || {
        parse(precompiled_body)
    })?;
    let decoded = median(&mut pre, "decode", true, reps, || decode(&text))?;
    median(&mut pre, "verify", true, reps, || {
        let ModuleCode::Precompiled(envelope) = decoded.module()? else {
            anyhow::bail!("the precompiled body holds portable Wasm");
        };
        // The artifact's own runtime: the step costs the same for every backend.
        let runtime = RuntimeId::from_name(&envelope.header.runtime)
            .context("the envelope names an unknown runtime")?;
        envelope
            .verify(runtime, &target, &keys, false)
            .context("verifying the envelope")
    })?;

    let mut port = Vec::new();
    let text = median(&mut port, "json_parse", false, reps, || {
        parse(portable_body)
    })?;
    median(&mut port, "decode", true, reps, || decode(&text))?;

    Ok(Breakdown {
        repetitions: reps,
        precompiled: pre,
        portable: port,
    })
}

/// Runs `step` `reps` times, pushes its median, and returns the last result.
fn median<T>(
    steps: &mut Vec<Step>,
    name: &'static str,
    in_server_time: bool,
    reps: u64,
    mut step: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let mut samples = Vec::with_capacity(reps as usize);
    let mut last = None;
    for _ in 0..reps {
        let start = Instant::now();
        let out = std::hint::black_box(step()?);
        samples.push(start.elapsed().as_nanos() as u64);
        last = Some(out);
    }
    samples.sort_unstable();
    steps.push(Step {
        step: name,
        median_us: crate::stats::percentile(&samples, 0.5) as f64 / 1000.0,
        in_server_time,
    });
    Ok(last.expect("at least one repetition"))
}

fn parse(body: &[u8]) -> anyhow::Result<String> {
    let body: InitBody = serde_json::from_slice(body).context("parsing the init body")?;
    Ok(body.value.code)
}

/// As the executor does it: decode the code and find the module in it (for an envelope, its
/// framing; for portable Wasm, its hash).
fn decode(text: &str) -> anyhow::Result<code::DecodedCode> {
    let decoded = code::decode(text, Some(true), MAX_MODULE_BYTES)?;
    decoded.module()?;
    Ok(decoded)
}

//! Where /init time goes before the runtime sees the module: the host-side steps the executor
//! performs on an /init body (JSON parse, base64, unzip, envelope parse, signature and payload
//! hash) repeated in this process on the same bytes with the same crates. What remains of the
//! executor's own /init time is the runtime's part (deserialize or cache load, link,
//! pre-instantiate) plus the pool hand-off.

use std::{io::Read, path::Path, time::Instant};

use anyhow::Context;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use wasm_artifact::{Envelope, RuntimeId, TrustedKeys, host_target};

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
    let code = median(&mut pre, "json_parse", false, reps, || {
        parse(precompiled_body)
    })?;
    let zip = median(&mut pre, "base64_decode", true, reps, || decode(&code))?;
    let bytes = median(&mut pre, "unzip", true, reps, || unzip(&zip))?;
    let envelope = median(&mut pre, "envelope_parse", true, reps, || {
        Envelope::parse(&bytes).context("parsing the envelope")
    })?;
    median(
        &mut pre,
        "verify_signature_and_payload_sha256",
        true,
        reps,
        || {
            // The artifact's own runtime: the step costs the same for every backend.
            let runtime = RuntimeId::from_name(&envelope.header.runtime)
                .context("the envelope names an unknown runtime")?;
            envelope
                .verify(runtime, &target, &keys, false)
                .context("verifying the envelope")
        },
    )?;

    let mut port = Vec::new();
    let code = median(&mut port, "json_parse", false, reps, || {
        parse(portable_body)
    })?;
    let wasm = median(&mut port, "base64_decode", true, reps, || decode(&code))?;
    median(&mut port, "module_sha256", true, reps, || {
        Ok(wasm_artifact::sha256_hex(&wasm))
    })?;

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

/// As the executor does it: drop whitespace, then decode.
fn decode(code: &str) -> anyhow::Result<Vec<u8>> {
    let compact: Vec<u8> = code.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(&compact)
        .context("decoding base64")
}

/// The single entry of a zip (the executor first peeks at every entry's head, then reads it).
fn unzip(zip: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).context("opening the zip")?;
    let mut entry = archive.by_index(0).context("reading the zip entry")?;
    let mut out = Vec::with_capacity(entry.size() as usize);
    entry
        .read_to_end(&mut out)
        .context("inflating the zip entry")?;
    Ok(out)
}

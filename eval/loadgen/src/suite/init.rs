//! /init latency: a signed precompiled zip, a portable module served from the executor's
//! on-disk cache (each /init a new container id), and a portable module compiled (each in a
//! new executor with an empty cache), and the first precompiled /init of a new executor.
//! Every /init uses a new connection, as the invoker does.

use std::path::Path;

use serde::Serialize;

use super::{Env, ScenarioSummary, attach_server_times, destroy_container, timed};
use crate::{
    breakdown::{self, Breakdown},
    executor::ExecutorProcess,
    http::{Client, ConnMode},
    precompile::Precompiled,
    record::Record,
    serverlog, workload,
};

pub const PRECOMPILED: &str = "init/precompiled";
pub const PORTABLE_CACHED: &str = "init/portable_cached";
pub const PORTABLE_COMPILE: &str = "init/portable_compile";
pub const PRECOMPILED_FIRST: &str = "init/precompiled_first_in_process";

/// The module every /init carries.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleInfo {
    pub wasm: String,
    pub wasm_bytes: usize,
    pub precompiled_zip_bytes: usize,
    pub precompiled_init_body_bytes: usize,
    pub portable_init_body_bytes: usize,
    /// Wall time of `wasm-precompile compile` for it (offline, for the record).
    pub precompile_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct InitResults {
    pub module: ModuleInfo,
    pub precompiled: ScenarioSummary,
    pub portable_cached: ScenarioSummary,
    pub portable_compile: ScenarioSummary,
    /// The first /init of a just-started executor (one-time costs of the process).
    pub precompiled_first_in_process: ScenarioSummary,
    pub breakdown: Breakdown,
}

/// Runs the init scenarios: precompiled and cached on `executor`, compiles on executors of
/// their own. Appends every record to `records`.
pub fn run(
    env: &Env,
    executor: &ExecutorProcess,
    wasm_path: &Path,
    artifact: &Precompiled,
    records: &mut Vec<Record>,
) -> anyhow::Result<InitResults> {
    let wasm = workload::read(wasm_path)?;
    let zip = workload::read(&artifact.zip)?;
    let precompiled_body = workload::init_body(&zip);
    let portable_body = workload::init_body(&wasm);
    let sizes = &env.sizes;
    let total = sizes.init_warmup + sizes.inits;

    tracing::info!(inits = total, "init: precompiled");
    let mut pre = repeated_inits(
        env,
        executor,
        PRECOMPILED,
        "pre",
        &precompiled_body,
        total,
        sizes.init_warmup,
    )?;

    tracing::info!(
        inits = total,
        "init: portable, served from the cache after the first"
    );
    // The first /init of this module compiles it and fills the cache: a warm-up by definition.
    let mut cached = repeated_inits(
        env,
        executor,
        PORTABLE_CACHED,
        "cached",
        &portable_body,
        total + 1,
        sizes.init_warmup + 1,
    )?;

    let times = serverlog::parse(&executor.log()?);
    attach_server_times(&mut pre, &times.inits, |r| format!("{}-{}", "pre", r.seq));
    attach_server_times(&mut cached, &times.inits, |r| {
        format!("{}-{}", "cached", r.seq)
    });

    tracing::info!(
        inits = sizes.compile_inits,
        "init: portable, compiled (a new executor and cache each)"
    );
    let mut compiled =
        first_in_new_executors(env, PORTABLE_COMPILE, "compile", &portable_body, None)?;
    tracing::info!(
        inits = sizes.compile_inits,
        "init: precompiled, first /init of a new executor"
    );
    let mut pre_first = first_in_new_executors(
        env,
        PRECOMPILED_FIRST,
        "prefirst",
        &precompiled_body,
        Some(&artifact.public_key),
    )?;

    let breakdown = breakdown::measure(
        &precompiled_body,
        &portable_body,
        &artifact.public_key,
        sizes.breakdown_reps,
    )?;
    let results = InitResults {
        module: ModuleInfo {
            wasm: wasm_path.display().to_string(),
            wasm_bytes: wasm.len(),
            precompiled_zip_bytes: zip.len(),
            precompiled_init_body_bytes: precompiled_body.len(),
            portable_init_body_bytes: portable_body.len(),
            precompile_seconds: artifact.compile_time.as_secs_f64(),
        },
        precompiled: ScenarioSummary::of(PRECOMPILED, &pre),
        portable_cached: ScenarioSummary::of(PORTABLE_CACHED, &cached),
        portable_compile: ScenarioSummary::of(PORTABLE_COMPILE, &compiled),
        precompiled_first_in_process: ScenarioSummary::of(PRECOMPILED_FIRST, &pre_first),
        breakdown,
    };
    records.append(&mut pre);
    records.append(&mut cached);
    records.append(&mut compiled);
    records.append(&mut pre_first);
    Ok(results)
}

/// `count` /inits of `body` into containers `<prefix>-<seq>`, each destroyed afterwards
/// (untimed) so the executor holds one container at a time.
fn repeated_inits(
    env: &Env,
    executor: &ExecutorProcess,
    scenario: &str,
    prefix: &str,
    body: &[u8],
    count: u64,
    warmup: u64,
) -> anyhow::Result<Vec<Record>> {
    let mut admin = Client::new(executor.addr, ConnMode::KeepAlive);
    let mut records = Vec::with_capacity(count as usize);
    for seq in 0..count {
        let id = format!("{prefix}-{seq}");
        let t = timed(env.epoch, || {
            Client::new(executor.addr, ConnMode::New).post(&format!("/{id}/init"), body)
        })?;
        check_ok(&id, &t.response)?;
        records.push(t.record(scenario, seq, seq < warmup));
        destroy_container(&mut admin, &id)?;
    }
    Ok(records)
}

/// One /init of `body` in each of `compile_inits` new executors (new, empty cache each).
fn first_in_new_executors(
    env: &Env,
    scenario: &str,
    prefix: &str,
    body: &[u8],
    trusted_key: Option<&Path>,
) -> anyhow::Result<Vec<Record>> {
    let mut records = Vec::new();
    for seq in 0..env.sizes.compile_inits {
        let id = format!("{prefix}-{seq}");
        let fresh = env.start_executor(&id, trusted_key, "info")?;
        let t = timed(env.epoch, || {
            Client::new(fresh.addr, ConnMode::New).post(&format!("/{id}/init"), body)
        })?;
        check_ok(&id, &t.response)?;
        let mut record = t.record(scenario, seq, false);
        let times = serverlog::parse(&fresh.stop()?);
        record.server_us = times.inits.get(&id).and_then(|v| v.first()).copied();
        records.push(record);
    }
    Ok(records)
}

fn check_ok(id: &str, response: &crate::http::Response) -> anyhow::Result<()> {
    if response.status != 200 {
        anyhow::bail!(
            "/init of {id} answered {}: {}",
            response.status,
            response.body_text()
        );
    }
    Ok(())
}

//! Per-request records, the raw material of every figure, and their CSV form (one row per
//! request; warm-up requests are kept and flagged so nothing is silently dropped), gzipped
//! when the file name ends in `.gz`.

use std::{io::Write, path::Path};

use anyhow::Context;

/// One request as the client saw it, optionally with the executor's own timing of it.
#[derive(Debug, Clone)]
pub struct Record {
    /// What was measured, e.g. `warm/echo/keep_alive`.
    pub scenario: String,
    /// Closed-loop client index (0 for sequential scenarios).
    pub client: u32,
    /// Request number within the client, warm-ups included.
    pub seq: u64,
    /// Warm-up requests are recorded but excluded from statistics.
    pub warmup: bool,
    /// When the request started, in ns since the benchmark's epoch.
    pub start_ns: u64,
    /// From just before connecting (new connection) or writing (keep-alive) to the last
    /// response byte, in ns.
    pub latency_ns: u64,
    /// HTTP status; 0 when the request failed below HTTP.
    pub status: u16,
    /// The executor's own duration for this request (from its log), when known, in µs.
    pub server_us: Option<u64>,
}

/// Writes `records` as CSV to `path` (created or replaced; gzipped if it ends in `.gz`).
pub fn write_csv(path: &Path, records: &[Record]) -> anyhow::Result<()> {
    write_file(path, |out| write_rows(out, records))
}

/// Creates or replaces `path` with what `rows` writes, gzipped if the name ends in `.gz`.
pub fn write_file(
    path: &Path,
    rows: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let file = std::io::BufWriter::new(file);
    let written = if path.extension().is_some_and(|e| e == "gz") {
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        rows(&mut gz).and_then(|()| gz.finish()?.flush())
    } else {
        let mut out = file;
        rows(&mut out).and_then(|()| out.flush())
    };
    written.with_context(|| format!("writing {}", path.display()))
}

fn write_rows(out: &mut dyn Write, records: &[Record]) -> std::io::Result<()> {
    writeln!(
        out,
        "scenario,client,seq,warmup,start_ns,latency_ns,status,server_us"
    )?;
    for r in records {
        let server = r.server_us.map(|v| v.to_string()).unwrap_or_default();
        writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            r.scenario, r.client, r.seq, r.warmup as u8, r.start_ns, r.latency_ns, r.status, server
        )?;
    }
    Ok(())
}

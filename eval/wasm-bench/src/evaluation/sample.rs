//! One row per activation of the evaluation, for every experiment and platform, and its CSV
//! form (gzipped when the file name ends in `.gz`): the raw material of every table and plot.

use std::{io::Write, path::Path};

use anyhow::Context;

#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub platform: String,
    /// The experiment's own label: the workload, pattern or variant.
    pub scenario: String,
    /// Concurrency (clients, simultaneous cold starts) of this part of the experiment.
    pub level: u32,
    pub client: u32,
    pub seq: u64,
    /// Excluded from the statistics: completed during the warm-up, or after the measured
    /// window of a closed-loop run.
    pub warmup: bool,
    /// Start of the activation (its scheduled arrival, for open-loop load), ns since the
    /// experiment's epoch.
    pub start_ns: u64,
    /// From the start to the result, ns.
    pub latency_ns: u64,
    /// For cold starts: from the start until the container was ready (created and /init done).
    pub ready_ns: Option<u64>,
    /// HTTP status of the result (0: failed below HTTP).
    pub status: u16,
    /// The activation needed a new container.
    pub cold: bool,
    pub action: String,
}

impl Sample {
    pub fn ok(&self) -> bool {
        self.status == 200
    }

    pub fn end_ns(&self) -> u64 {
        self.start_ns + self.latency_ns
    }
}

/// Writes `samples` to `path` as CSV (gzipped if the name ends in `.gz`).
pub fn write_csv(path: &Path, samples: &[Sample]) -> anyhow::Result<()> {
    write_file(path, |out| write_rows(out, samples))
}

fn write_rows(out: &mut dyn Write, samples: &[Sample]) -> std::io::Result<()> {
    writeln!(
        out,
        "platform,scenario,level,client,seq,warmup,start_ns,latency_ns,ready_ns,status,cold,action"
    )?;
    for s in samples {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            s.platform,
            s.scenario,
            s.level,
            s.client,
            s.seq,
            u8::from(s.warmup),
            s.start_ns,
            s.latency_ns,
            s.ready_ns.map(|v| v.to_string()).unwrap_or_default(),
            s.status,
            u8::from(s.cold),
            s.action
        )?;
    }
    Ok(())
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

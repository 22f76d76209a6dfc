//! The memory a process holds: its resident set from /proc/PID/status (total, anonymous,
//! file-backed) and its proportional share from /proc/PID/smaps_rollup.

use anyhow::Context;
use serde::Serialize;

/// Resident memory of a process, from /proc/PID/status (KiB), and its proportional share
/// (PSS: pages shared with other processes divided among them) from /proc/PID/smaps_rollup.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rss {
    pub total_kib: u64,
    pub anon_kib: u64,
    pub file_kib: u64,
    pub pss_kib: u64,
}

/// Resident memory of process `pid` in bytes, if it runs.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    rss(pid).ok().map(|r| r.total_kib * 1024)
}

/// The resident memory of process `pid` (an error when it does not run).
pub fn rss(pid: u32) -> anyhow::Result<Rss> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    let rollup = format!("/proc/{pid}/smaps_rollup");
    let pss_kib = std::fs::read_to_string(&rollup)
        .with_context(|| format!("reading {rollup}"))?
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0);
    Ok(Rss {
        total_kib: field("VmRSS:"),
        anon_kib: field("RssAnon:"),
        file_kib: field("RssFile:"),
        pss_kib,
    })
}

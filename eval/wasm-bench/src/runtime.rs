//! The load generator's async runtime: one worker thread drives every activation and
//! connection in flight (its share of the CPU stays one thread however many wait), and blocking
//! platform work (creating containers, native processes) gets as many threads as it has work at
//! once, as a thread per client would.

use tokio::runtime::Runtime;

/// A runtime whose threads are named after `name`; threads outside it may wait for its work
/// with `Handle::block_on`.
pub fn build(name: &str) -> anyhow::Result<Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(16 * 1024)
        .thread_stack_size(256 * 1024)
        .thread_name(name)
        .enable_all()
        .build()?)
}

/// Threads of this process, for tests that check work does not take a thread each.
#[cfg(test)]
pub fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0)
}

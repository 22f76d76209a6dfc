//! CPU time a process has used, from the kernel's per-thread scheduler statistics
//! (`/proc/<pid>/task/*/schedstat`, nanoseconds on CPU), so a scenario can report CPU per request.

use std::path::Path;

/// Nanoseconds on CPU, summed over the live threads of process `pid`. Threads that exited
/// between two readings take their time with them: fine for the executor, whose threads (HTTP
/// workers, guest pool) live as long as it does.
pub fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| thread_cpu_ns(&task.path().join("schedstat")))
        .sum()
}

fn thread_cpu_ns(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU used by a process between two readings, per request, in µs.
pub fn per_request_us(before: u64, after: u64, requests: usize) -> Option<f64> {
    (requests > 0).then(|| after.saturating_sub(before) as f64 / requests as f64 / 1000.0)
}

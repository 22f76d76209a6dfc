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

/// Nanoseconds on CPU of this process, its exited threads included (`getrusage`).
pub fn own_cpu_ns() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_SELF, &mut usage) == 0).then_some(usage)
    };
    usage.map_or(0, |u| {
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        ns(u.ru_utime) + ns(u.ru_stime)
    })
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

/// Seconds of `CLOCK_MONOTONIC`, the clock `perf record -k CLOCK_MONOTONIC` stamps its samples
/// with: a measured stretch recorded with it can be cut out of a profile taken meanwhile.
pub fn monotonic_s() -> f64 {
    // SAFETY: clock_gettime writes into the zeroed struct it is given.
    let now = unsafe {
        let mut now: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
        now
    };
    now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
}

//! CPU pinning for the evaluation, as `taskset` would do it: the load generator on some CPUs,
//! the measured platforms (executors, Docker's engine and containers, native processes) on the
//! others, so the load's own CPU time does not land on the cores being measured.

use std::{os::unix::process::CommandExt as _, process::Command, sync::OnceLock};

use anyhow::{Context, bail};
use serde::Serialize;

/// Where the load generator and the platforms run.
#[derive(Debug, Clone, Serialize)]
pub struct Pinning {
    pub loadgen: Vec<usize>,
    pub platforms: Vec<usize>,
}

/// The platforms' CPUs, once pinning is on.
static PLATFORM_CPUS: OnceLock<Vec<usize>> = OnceLock::new();

impl Pinning {
    /// The last quarter of the CPUs (at least one) for the load generator and the rest for
    /// the platforms, on machines with 4 CPUs or more; on smaller ones none: the platforms
    /// would lose half the machine or more.
    pub fn automatic(cpus: usize) -> Option<Pinning> {
        (cpus >= 4).then(|| {
            let loadgen = (cpus / 4).max(1);
            Pinning {
                loadgen: (cpus - loadgen..cpus).collect(),
                platforms: (0..cpus - loadgen).collect(),
            }
        })
    }

    /// Pins this process's current thread (every thread it starts from now on inherits it) to
    /// the load generator's CPUs, and makes processes started for platforms run on theirs.
    pub fn apply(&self) -> anyhow::Result<()> {
        set_affinity(0, &self.loadgen).context("pinning the load generator")?;
        let _ = PLATFORM_CPUS.set(self.platforms.clone());
        Ok(())
    }
}

/// `0-2,5` → [0, 1, 2, 5].
pub fn parse_list(list: &str) -> anyhow::Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to): (usize, usize) = (from.parse()?, to.parse()?);
                if from > to {
                    bail!("CPU range {part} runs backwards");
                }
                cpus.extend(from..=to);
            }
            None => cpus.push(part.parse().with_context(|| format!("CPU {part:?}"))?),
        }
    }
    if cpus.is_empty() {
        bail!("no CPU in {list:?}");
    }
    Ok(cpus)
}

/// The platforms' CPUs as `docker run --cpuset-cpus` takes them, when pinning is on.
pub fn platform_cpuset() -> Option<String> {
    PLATFORM_CPUS.get().map(|cpus| {
        cpus.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// Makes `command` run on the platforms' CPUs, when pinning is on.
pub fn pin_command(command: &mut Command) {
    if let Some(cpus) = PLATFORM_CPUS.get().cloned() {
        // SAFETY: between fork and exec the closure only makes one system call on its own
        // thread, with a set built before the fork.
        unsafe {
            command.pre_exec(move || set_affinity(0, &cpus));
        }
    }
}

/// Moves every thread of a running process (`pid`) to the platforms' CPUs, when pinning is on.
pub fn pin_process(pid: u32) -> anyhow::Result<()> {
    let Some(cpus) = PLATFORM_CPUS.get() else {
        return Ok(());
    };
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .with_context(|| format!("listing the threads of process {pid}"))?;
    for task in tasks.filter_map(Result::ok) {
        if let Ok(tid) = task.file_name().to_string_lossy().parse::<libc::pid_t>() {
            // A thread may have ended since the listing.
            let _ = set_affinity(tid, cpus);
        }
    }
    Ok(())
}

/// `sched_setaffinity(tid, cpus)`; 0 is the calling thread.
fn set_affinity(tid: libc::pid_t, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: the set is zeroed and filled through libc's own macros; the call reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_the_automatic_split() {
        assert_eq!(parse_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("").is_err());
        assert!(Pinning::automatic(2).is_none());
        let eight = Pinning::automatic(8).unwrap();
        assert_eq!(
            (eight.loadgen, eight.platforms),
            (vec![6, 7], (0..6).collect())
        );
    }
}

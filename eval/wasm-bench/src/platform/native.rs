//! The upper bound: the native build of the same action source started bare, a fresh process
//! per activation with the blackbox convention (parameters as argv[1], the last stdout line is
//! the result), no container and no proxy.

use std::{
    net::{IpAddr, Ipv4Addr},
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, bail};
use serde_json::Value;

use super::{Action, Container, Platform, RunResult};

pub struct NativePlatform {
    /// Directory of the native builds (`<module>`; variants under `variants/native/`).
    dir: PathBuf,
}

impl NativePlatform {
    /// Checks every module has its native binary.
    pub fn new(dir: &Path, modules: &[String]) -> anyhow::Result<NativePlatform> {
        let platform = NativePlatform {
            dir: dir.to_path_buf(),
        };
        for module in modules {
            let binary = platform.binary(module);
            if !binary.is_file() {
                bail!(
                    "{} is missing (build it with actions/build.sh --native)",
                    binary.display()
                );
            }
        }
        Ok(platform)
    }

    fn binary(&self, module: &str) -> PathBuf {
        match module.split_once('.') {
            Some(_) => self
                .dir
                .join("..")
                .join("variants")
                .join("native")
                .join(module),
            None => self.dir.join(module),
        }
    }
}

impl Platform for NativePlatform {
    fn name(&self) -> &str {
        "native"
    }

    fn create(&self, action: &Action) -> anyhow::Result<Box<dyn Container>> {
        Ok(Box::new(NativeProcess {
            binary: self.binary(&action.module),
        }))
    }

    fn host_address(&self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    }

    /// The CPU time of this process's finished children: the action processes, when nothing
    /// else (a `docker` command) ran meanwhile.
    fn own_cpu_ns(&self) -> Option<u64> {
        // SAFETY: getrusage writes into the zeroed struct it is given.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            (libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) == 0).then_some(usage)
        }?;
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        Some(ns(usage.ru_utime) + ns(usage.ru_stime))
    }
}

struct NativeProcess {
    binary: PathBuf,
}

impl Container for NativeProcess {
    fn run(&self, params: &Value) -> anyhow::Result<RunResult> {
        let mut command = Command::new(&self.binary);
        crate::affinity::pin_command(&mut command);
        let output = command
            .arg(serde_json::to_string(params)?)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("running {}", self.binary.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
        let result = last.and_then(|l| serde_json::from_str::<Value>(l).ok());
        Ok(match result {
            Some(value) if value.is_object() && output.status.success() => RunResult {
                status: 200,
                body: serde_json::to_vec(&value)?,
            },
            _ => RunResult {
                status: 502,
                body: br#"{"error":"The action did not return a dictionary."}"#.to_vec(),
            },
        })
    }

    fn remove(self: Box<Self>) -> anyhow::Result<()> {
        Ok(())
    }
}

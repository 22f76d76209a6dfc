//! Starts and stops a `wasm-executor` process for a measurement (the test kit's process: a free
//! loopback port, ready once `GET /health` answers; here with its own state directory and its
//! log captured to a file), and makes and removes its containers.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context, bail};
use wasm_executor_testkit::process::{self, ExecutorProcess as Process};

use crate::http::{Client, ConnMode};

/// How long it may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// What to start.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    pub binary: PathBuf,
    /// The executor's private state directory (its compile cache is inside).
    pub state_dir: PathBuf,
    pub trusted_key: Option<PathBuf>,
    /// `RUST_LOG` for the executor (`info` logs inits; `wasm_executor=debug` also each run).
    pub log_filter: String,
    /// Where its stderr goes.
    pub log_path: PathBuf,
    /// More flags, passed as given.
    pub extra_args: Vec<String>,
}

/// A running executor; stopped when dropped without [`ExecutorProcess::stop`].
pub struct ExecutorProcess {
    process: Process,
    pub addr: SocketAddr,
    log_path: PathBuf,
}

impl ExecutorProcess {
    pub fn start(options: &ExecutorOptions) -> anyhow::Result<ExecutorProcess> {
        let addr = process::free_loopback_port()?;
        let log = std::fs::File::create(&options.log_path)
            .with_context(|| format!("creating {}", options.log_path.display()))?;
        let mut command = Command::new(&options.binary);
        command
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--state-dir")
            .arg(&options.state_dir)
            .env("RUST_LOG", &options.log_filter)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(key) = &options.trusted_key {
            command.arg("--trusted-key").arg(key);
        }
        crate::affinity::pin_command(&mut command);
        command.args(&options.extra_args);
        let mut process = Process::spawn(command, addr)?;
        process.grace = STOP_TIMEOUT;
        let mut executor = ExecutorProcess {
            process,
            addr,
            log_path: options.log_path.clone(),
        };
        if let Err(error) = executor.process.wait_healthy(None) {
            bail!(
                "{error:#}; its log:\n{}",
                executor.log().unwrap_or_default()
            );
        }
        tracing::debug!(%addr, state = %options.state_dir.display(), "executor ready");
        Ok(executor)
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        Some(self.process.child_id())
    }

    /// Its log so far.
    pub fn log(&self) -> anyhow::Result<String> {
        std::fs::read_to_string(&self.log_path)
            .with_context(|| format!("reading {}", self.log_path.display()))
    }

    /// Stops the executor (SIGTERM, then SIGKILL) and returns its log.
    pub fn stop(mut self) -> anyhow::Result<String> {
        self.process.stop();
        self.log()
    }
}

/// A fresh directory under `parent`, empty.
pub fn fresh_dir(parent: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let dir = parent.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Initializes container `id` with an /init body; any answer but 200 is an error.
pub fn init_container(addr: SocketAddr, id: &str, body: &[u8]) -> anyhow::Result<()> {
    let response = Client::new(addr, ConnMode::New).post(&format!("/{id}/init"), body)?;
    if response.status != 200 {
        bail!(
            "/init of {id} answered {}: {}",
            response.status,
            response.text()
        );
    }
    Ok(())
}

/// Destroys container `id`; any answer but 200 is an error.
pub fn destroy_container(client: &mut Client, id: &str) -> anyhow::Result<()> {
    let response = client.post(&format!("/{id}/destroy"), b"")?;
    if response.status != 200 {
        bail!(
            "/destroy of {id} answered {}: {}",
            response.status,
            response.text()
        );
    }
    Ok(())
}

/// The runtime and binary of each `--executor RUNTIME=PATH`.
pub fn parse_specs(specs: &[String]) -> anyhow::Result<Vec<(String, PathBuf)>> {
    specs
        .iter()
        .map(|spec| {
            let (runtime, binary) = spec
                .split_once('=')
                .with_context(|| format!("--executor {spec:?}: expected RUNTIME=PATH"))?;
            Ok((runtime.to_owned(), PathBuf::from(binary)))
        })
        .collect()
}

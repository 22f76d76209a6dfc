//! Starts and stops a `wasm-executor` process for a measurement (a free loopback port, its own
//! cache directory, its log captured to a file, ready once `GET /health` answers), and makes
//! and removes its containers.

use std::{
    net::{SocketAddr, TcpListener},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};

use crate::http::{Client, ConnMode};

/// How long an executor may take to answer its first health check.
const START_TIMEOUT: Duration = Duration::from_secs(20);
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

/// A running executor; killed if dropped without [`ExecutorProcess::stop`].
pub struct ExecutorProcess {
    child: Option<Child>,
    pub addr: SocketAddr,
    log_path: PathBuf,
}

impl ExecutorProcess {
    pub fn start(options: &ExecutorOptions) -> anyhow::Result<ExecutorProcess> {
        let addr = free_loopback_port()?;
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
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(key) = &options.trusted_key {
            command.arg("--trusted-key").arg(key);
        }
        crate::affinity::pin_command(&mut command);
        command.args(&options.extra_args);
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", options.binary.display()))?;
        let mut process = ExecutorProcess {
            child: Some(child),
            addr,
            log_path: options.log_path.clone(),
        };
        process.wait_healthy()?;
        tracing::debug!(%addr, state = %options.state_dir.display(), "executor ready");
        Ok(process)
    }

    fn wait_healthy(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().transpose()) {
                let status = status?;
                bail!(
                    "the executor exited at start ({status}); its log:\n{}",
                    std::fs::read_to_string(&self.log_path).unwrap_or_default()
                );
            }
            if let Ok(response) = Client::new(self.addr, ConnMode::New).get("/health")
                && response.status == 200
            {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                bail!("the executor did not answer /health within {START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Its process id (while running).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its log so far.
    pub fn log(&self) -> anyhow::Result<String> {
        std::fs::read_to_string(&self.log_path)
            .with_context(|| format!("reading {}", self.log_path.display()))
    }

    /// Stops the executor (SIGTERM, then SIGKILL) and returns its log.
    pub fn stop(mut self) -> anyhow::Result<String> {
        self.terminate();
        self.log()
    }

    fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // std only sends SIGKILL; `kill` (procps/coreutils) sends SIGTERM for a graceful stop.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        tracing::warn!(pid = child.id(), "executor ignored SIGTERM, killing it");
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for ExecutorProcess {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// A loopback address no one listens on right now (the kernel's choice of a free port).
fn free_loopback_port() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?)
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
            response.body_text()
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
            response.body_text()
        );
    }
    Ok(())
}

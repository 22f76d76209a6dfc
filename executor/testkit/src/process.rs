//! An executor process of a test or a measurement: started on a free loopback port, ready once
//! `GET /health` answers (or failed at once if it exits first), stopped with SIGTERM — which a
//! launcher such as an emulator or `docker run` passes on — and killed only if it ignores it.

use std::{
    net::{SocketAddr, TcpListener},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};

use crate::http::{Client, ConnMode};

/// How long an executor may take to answer its first health check (also under an emulator).
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A loopback address no one listens on right now (the kernel's choice of a free port).
pub fn free_loopback_port() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?)
}

/// A running executor; stopped when dropped (see [`ExecutorProcess::stop`]).
pub struct ExecutorProcess {
    child: Child,
    pub addr: SocketAddr,
    /// How long it may take to exit after SIGTERM before it is killed.
    pub grace: Duration,
}

impl ExecutorProcess {
    /// Spawns `command`, which makes the executor listen on `addr`; does not wait for it.
    pub fn spawn(mut command: Command, addr: SocketAddr) -> anyhow::Result<Self> {
        let child = command.stdin(Stdio::null()).spawn().with_context(|| {
            format!(
                "starting {} (missing tools: scripts/prerequisites.sh)",
                command.get_program().to_string_lossy()
            )
        })?;
        Ok(ExecutorProcess {
            child,
            addr,
            grace: Duration::from_secs(20),
        })
    }

    /// Waits until `GET /health` answers 200 (with `token`, for an executor that has one).
    pub fn wait_healthy(&mut self, token: Option<&str>) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the executor exited at start ({status})");
            }
            let mut client =
                Client::new(self.addr, ConnMode::New).with_token(token.map(str::to_owned));
            if let Ok(response) = client.get("/health")
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

    /// The process id of the child (a launcher's own, when there is one).
    pub fn child_id(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status once it has ended by itself, or `None` if it still runs after `within`.
    pub fn exit_status(&mut self, within: Duration) -> anyhow::Result<Option<ExitStatus>> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if started.elapsed() >= within {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops it: SIGTERM, then SIGKILL after [`ExecutorProcess::grace`].
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        // std only sends SIGKILL; `kill` (procps/coreutils) sends SIGTERM for a graceful stop.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        if let Ok(Some(_)) = self.exit_status(self.grace) {
            return;
        }
        tracing::warn!(
            pid = self.child.id(),
            "executor ignored SIGTERM, killing it"
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ExecutorProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

//! The async runtime that serves guests running on blocking threads (the pool, and every guest
//! of the wasmer and WAMR builds): their timers and sockets (`poll_oneoff`, `http_get`) are
//! driven by a worker of its own, never by the HTTP workers, which `--guest-execution
//! blocking-worker` keeps blocked while such a guest waits.

use anyhow::Context;
use tokio::runtime::{Builder, Handle};

/// Starts the runtime for the life of the process; a blocking thread waits on its handle with
/// [`Handle::block_on`].
pub fn start() -> anyhow::Result<Handle> {
    let runtime = Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("host-io")
        .enable_all()
        .build()
        .context("starting the host I/O runtime")?;
    // Never dropped: dropping a runtime inside the executor's own would panic at shutdown.
    Ok(Box::leak(Box::new(runtime)).handle().clone())
}

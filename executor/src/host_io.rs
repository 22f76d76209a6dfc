//! The async runtime that serves guests running on blocking threads (the pool, and every guest
//! of the wasmer and WAMR builds): their timers and sockets (`poll_oneoff`, `http_get`) are
//! driven by a worker of its own, never by the HTTP workers, which `--guest-execution
//! blocking-worker` keeps blocked while such a guest waits. A guest's thread waits for such a
//! future by parking ([`wait_for`]), which works on any thread, a connection thread's own
//! runtime included, where a runtime's `block_on` would refuse to nest.

use std::{
    sync::Arc,
    task::{Context, Poll, Wake, Waker},
    time::Instant,
};

use anyhow::Context as _;
use tokio::runtime::{Builder, Handle};

/// Starts the runtime for the life of the process; a blocking thread waits on it with
/// [`wait_for`].
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

/// Runs `future` to its end on this thread, its timers, sockets and spawned tasks on
/// `host_io`'s runtime.
pub fn wait_for<F: Future>(host_io: &Handle, future: F) -> F::Output {
    let _context = host_io.enter();
    match park_until(future, None) {
        Some(output) => output,
        None => unreachable!("a wait with no deadline ends only with its future"),
    }
}

/// Polls `future` on this thread, parking it in between, until it is ready, or gives up at
/// `deadline`. Outside tokio's cooperative budget: a guest's thread may be inside a task of a
/// connection thread's runtime, whose budget, once spent, would never be renewed here.
pub fn park_until<F: Future>(future: F, deadline: Option<Instant>) -> Option<F::Output> {
    let waker = Waker::from(Arc::new(Unparker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(tokio::task::unconstrained(future));
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
        match deadline {
            None => std::thread::park(),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                std::thread::park_timeout(left);
            }
        }
    }
}

/// Wakes a thread parked in [`park_until`].
struct Unparker(std::thread::Thread);

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_wait_inside_another_runtimes_task_is_driven_by_the_host_io_runtime() {
        let host_io = start().unwrap();
        let own = Builder::new_current_thread().enable_all().build().unwrap();
        // Inside a task of a current-thread runtime, where `host_io.block_on` would panic.
        let slept = own.block_on(async {
            wait_for(&host_io, async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                tokio::spawn(async { 7 }).await.unwrap()
            })
        });
        assert_eq!(slept, 7);
    }

    #[test]
    fn a_wait_gives_up_at_its_deadline() {
        let never = std::future::pending::<()>();
        assert!(park_until(never, Some(Instant::now() + Duration::from_millis(5))).is_none());
    }
}

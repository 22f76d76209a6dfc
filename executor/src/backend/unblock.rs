//! Ends host calls that block past an activation's deadline: opening a FIFO someone placed in a
//! grant, a read that never completes. Neither wasmtime's epoch checks nor wasmer's interrupt
//! reach a thread waiting in the kernel, so a watchdog signals every thread whose activation is
//! past its deadline (plus [`GRACE`]) with [`SIGNAL`], again every [`RETRY`] until the
//! activation ends. The signal's handler does nothing and is installed without `SA_RESTART`:
//! the blocked system call returns `EINTR`, the host call fails back to the guest, and the
//! guest meets its deadline check right after (wasmtime's epoch check at its next loop edge or
//! call, wasmer's host-call guard on return).
//!
//! Only this build's own threads are signalled, and only while registered; a signal from
//! elsewhere reaches the same empty handler and changes nothing.

use std::time::{Duration, Instant};

use anyhow::Context;

use super::deadline_queue::{DeadlineQueue, Expiry, Watch};

/// The signal used; reserved by the wasmtime and wasmer builds.
pub const SIGNAL: libc::c_int = libc::SIGUSR2;
/// How long after its deadline a guest may stay in a host call before it is signalled: the
/// runtimes' own mechanisms come first.
const GRACE: Duration = Duration::from_millis(20);
/// How often a thread still blocked is signalled again.
const RETRY: Duration = Duration::from_millis(50);

/// A registered thread (its id, which on Linux is a plain integer), signalled at its time.
pub struct BlockedThread(libc::pthread_t);

impl Expiry for BlockedThread {
    fn expired(&mut self, now: Instant) -> Option<Instant> {
        // SAFETY: the thread is registered, so it is alive (a registration is dropped on its
        // own thread before that thread could end), and the handler is installed.
        unsafe { libc::pthread_kill(self.0, SIGNAL) };
        Some(now + RETRY)
    }
}

/// The watchdog; cheap to clone.
#[derive(Clone)]
pub struct Unblocker {
    queue: DeadlineQueue<BlockedThread>,
}

/// The calling thread stays registered until this is dropped.
pub type Registration = Watch<BlockedThread>;

impl Unblocker {
    /// Installs the signal handler (once per process) and starts the watchdog thread.
    pub fn start() -> anyhow::Result<Self> {
        install_handler()?;
        Ok(Unblocker {
            queue: DeadlineQueue::start("host-call-unblocker")?,
        })
    }

    /// Registers the calling thread, running an activation due at `deadline`.
    pub fn register(&self, deadline: Instant) -> Registration {
        // SAFETY: pthread_self has no preconditions.
        let thread = BlockedThread(unsafe { libc::pthread_self() });
        self.queue.watch(deadline + GRACE, thread)
    }
}

extern "C" fn interrupt_system_call(_signal: libc::c_int) {}

fn install_handler() -> anyhow::Result<()> {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask is a complete
        // description; the handler is async-signal-safe (it does nothing). No SA_RESTART.
        result = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = interrupt_system_call as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = 0;
            if libc::sigaction(SIGNAL, &action, std::ptr::null_mut()) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        };
    });
    result.context("installing the host-call interrupt handler")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_blocked_past_the_deadline_is_interrupted() {
        let unblocker = Unblocker::start().unwrap();
        let (reader, _writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let started = Instant::now();
        let _registered = unblocker.register(Instant::now() + Duration::from_millis(100));
        let mut buf = [0u8; 1];
        // A raw read: Rust's std would retry on EINTR, a WASI layer hands it to the guest.
        // SAFETY: reading into a valid buffer from an open descriptor.
        let n = unsafe {
            libc::read(
                std::os::fd::AsRawFd::as_raw_fd(&reader),
                buf.as_mut_ptr().cast(),
                1,
            )
        };
        assert_eq!(n, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EINTR)
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
    }
}

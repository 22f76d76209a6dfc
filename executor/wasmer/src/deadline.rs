//! The time limit. Wasmer has no epoch interruption; instead of instrumenting compiled code
//! (metering would cost throughput and would have to be compiled into every artifact
//! identically), a watchdog thread interrupts a guest past its deadline with wasmer's host
//! interrupt: a signal to the guest's thread that unwinds the Wasm stack with a trap.
//!
//! A signal is only safe while the thread runs guest code. Wasmer itself runs a little of its
//! own code on the guest's stack right after each host call returns (it takes a lock there), so
//! the watchdog never signals a guest that may be near a host call:
//! - every host function counts itself on entry, and after the deadline ends the activation
//!   itself, at entry or at exit, without returning to the guest ([`RunClock::enter`],
//!   [`RunClock::leave`]);
//! - the watchdog signals only a guest that made no host call during a quiet period after
//!   the deadline, i.e. one that is computing, and signals again while it keeps running
//!   (delivery is best effort).
//!
//! A guest in a loop is therefore stopped at most `TICK + QUIET` (plus scheduling) after its
//! deadline, and guest code pays nothing: no instruction is added to it.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use wasm_executor::backend::deadline_queue::{self, DeadlineQueue, Expiry};
use wasmer::Interrupter;

use super::stop::HostStop;

/// How long a guest past its deadline must make no host call before it is signalled: far
/// longer than the few instructions wasmer runs after a host call, even if the thread is
/// descheduled for a while in between.
const QUIET: Duration = Duration::from_millis(10);

/// How often a guest still running after a signal is signalled again.
const RETRY: Duration = Duration::from_millis(10);

/// The deadline of one activation and what its host functions report to the watchdog.
#[derive(Debug)]
pub struct RunClock {
    deadline: Instant,
    host_calls: AtomicU64,
    in_host: AtomicBool,
    signalled: AtomicBool,
}

impl RunClock {
    pub fn new(deadline: Instant) -> Self {
        RunClock {
            deadline,
            host_calls: AtomicU64::new(0),
            in_host: AtomicBool::new(false),
            signalled: AtomicBool::new(false),
        }
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// True when the watchdog interrupted the guest (its trap is then the time limit).
    pub fn signalled(&self) -> bool {
        self.signalled.load(Ordering::SeqCst)
    }

    /// Called first by every host function.
    pub fn enter(&self) -> Result<(), HostStop> {
        self.host_calls.fetch_add(1, Ordering::SeqCst);
        self.in_host.store(true, Ordering::SeqCst);
        if Instant::now() >= self.deadline {
            self.in_host.store(false, Ordering::SeqCst);
            return Err(HostStop::Deadline);
        }
        Ok(())
    }

    /// Called last by every host function: past the deadline the guest is not resumed.
    pub fn leave(&self) -> Result<(), HostStop> {
        let late = Instant::now() >= self.deadline;
        self.in_host.store(false, Ordering::SeqCst);
        if late {
            Err(HostStop::Deadline)
        } else {
            Ok(())
        }
    }
}

/// What the queue does with an activation past its deadline.
pub struct Interruption {
    clock: Arc<RunClock>,
    interrupter: Interrupter,
    /// Host calls counted at the last check after the deadline.
    seen_calls: Option<u64>,
}

impl Expiry for Interruption {
    /// Signals the guest if it has been computing without a host call since the last check,
    /// else checks again after another quiet period.
    fn expired(&mut self, now: Instant) -> Option<Instant> {
        let calls = self.clock.host_calls.load(Ordering::SeqCst);
        let quiet = self.seen_calls == Some(calls) && !self.clock.in_host.load(Ordering::SeqCst);
        self.seen_calls = Some(calls);
        if quiet {
            self.clock.signalled.store(true, Ordering::SeqCst);
            self.interrupter.interrupt();
            Some(now + RETRY)
        } else {
            Some(now + QUIET)
        }
    }
}

/// The deadline queue of running activations.
#[derive(Clone)]
pub struct Watchdog {
    queue: DeadlineQueue<Interruption>,
}

/// Keeps an activation watched; dropping it (when the run ends) stops the watching.
pub type Watch = deadline_queue::Watch<Interruption>;

impl Watchdog {
    pub fn start() -> anyhow::Result<Self> {
        Ok(Watchdog {
            queue: DeadlineQueue::start("wasm-deadlines")?,
        })
    }

    /// Watches an activation until the returned guard is dropped.
    pub fn watch(&self, clock: Arc<RunClock>, interrupter: Interrupter) -> Watch {
        let deadline = clock.deadline;
        let interruption = Interruption {
            clock,
            interrupter,
            seen_calls: None,
        };
        self.queue.watch(deadline, interruption)
    }
}

/// wasmer's SIGUSR1 handler, saved when [`accept_only_own_interrupts`] put the filter in front.
static WASMER_INTERRUPT_HANDLER: std::sync::OnceLock<libc::sigaction> = std::sync::OnceLock::new();

/// Puts a filter in front of wasmer's SIGUSR1 handler: wasmer's handler asserts that an
/// interrupt was requested, so a SIGUSR1 from anywhere else (`kill -USR1` by another process)
/// would abort the executor. Only this process's own thread-directed signals (the watchdog's
/// `pthread_kill`) reach wasmer; any other SIGUSR1 is ignored.
pub fn accept_only_own_interrupts(engine: &wasmer::Engine) -> anyhow::Result<()> {
    // wasmer installs its handlers when the first store is made.
    drop(wasmer::Store::new(engine.clone()));
    if WASMER_INTERRUPT_HANDLER.get().is_some() {
        return Ok(());
    }
    // SAFETY: a zeroed sigaction with a handler, SA_SIGINFO and an empty mask is complete; the
    // previous action is written into `previous` by the kernel before it is read.
    unsafe {
        let mut filter: libc::sigaction = std::mem::zeroed();
        filter.sa_sigaction = only_own_interrupts as *const () as usize;
        filter.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut filter.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGUSR1, &filter, &mut previous) != 0 {
            anyhow::bail!(
                "installing the SIGUSR1 filter: {}",
                std::io::Error::last_os_error()
            );
        }
        let _ = WASMER_INTERRUPT_HANDLER.set(previous);
    }
    Ok(())
}

extern "C" fn only_own_interrupts(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler; getpid and reading
    // the saved handler (set before this handler was installed) are async-signal-safe.
    unsafe {
        let own = (*info).si_code == libc::SI_TKILL && (*info).si_pid() == libc::getpid();
        if !own {
            return;
        }
        if let Some(wasmer) = WASMER_INTERRUPT_HANDLER.get()
            && wasmer.sa_flags & libc::SA_SIGINFO != 0
        {
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(wasmer.sa_sigaction);
            handler(signal, info, context);
        }
    }
}

//! The time limit: a deadline queue (the library's) whose thread terminates the instances whose
//! deadline has passed, through WAMR's `wasm_runtime_terminate` (made for exactly this: another
//! thread stopping an instance). The guest then stops at its next loop back-edge or call, where
//! interpreter and AOT code poll the terminate flag.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use wasm_executor::backend::deadline_queue::{self, DeadlineQueue, Expiry};

use super::ffi::Terminator;

#[derive(Clone)]
pub struct Watchdog {
    queue: DeadlineQueue<Termination>,
}

/// What the queue does to an instance at its deadline.
pub struct Termination {
    terminator: Terminator,
    fired: Arc<AtomicBool>,
}

impl Expiry for Termination {
    fn expired(&mut self, _now: Instant) -> Option<Instant> {
        self.fired.store(true, Ordering::Release);
        self.terminator.terminate();
        tracing::debug!("deadline passed: guest terminated");
        None
    }
}

/// Watches one instance until dropped; dropping it before the instance is destroyed is the
/// caller's side of the contract (the terminator itself is safe to call late).
pub struct Watch {
    _queued: deadline_queue::Watch<Termination>,
    fired: Arc<AtomicBool>,
}

impl Watchdog {
    pub fn start() -> anyhow::Result<Self> {
        Ok(Watchdog {
            queue: DeadlineQueue::start("wamr-watchdog")?,
        })
    }

    /// Terminates the instance behind `terminator` once `deadline` passes, unless the returned
    /// [`Watch`] is dropped first.
    pub fn watch(&self, deadline: Instant, terminator: Terminator) -> Watch {
        let fired = Arc::new(AtomicBool::new(false));
        let termination = Termination {
            terminator,
            fired: Arc::clone(&fired),
        };
        Watch {
            _queued: self.queue.watch(deadline, termination),
            fired,
        }
    }
}

impl Watch {
    /// True when the deadline passed and the instance was told to terminate.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }
}

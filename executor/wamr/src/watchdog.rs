//! The time limit: one thread that sleeps until the earliest deadline among running guests and
//! terminates the instances whose deadline has passed, through WAMR's `wasm_runtime_terminate`
//! (made for exactly this: another thread stopping an instance). The guest then stops at its
//! next loop back-edge or call, where interpreter and AOT code poll the terminate flag.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use anyhow::Context;

use super::ffi::Terminator;

#[derive(Clone)]
pub struct Watchdog {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Watched instances by (deadline, registration number).
    watched: BTreeMap<(Instant, u64), Entry>,
    next_id: u64,
}

struct Entry {
    terminator: Terminator,
    fired: Arc<AtomicBool>,
}

/// Watches one instance until dropped; dropping it before the instance is destroyed is the
/// caller's side of the contract (the terminator itself is safe to call late).
pub struct Watch {
    shared: Arc<Shared>,
    key: (Instant, u64),
    fired: Arc<AtomicBool>,
}

impl Watchdog {
    pub fn start() -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("wamr-watchdog".into())
            .spawn(move || thread_shared.run())
            .context("starting the WAMR watchdog thread")?;
        Ok(Watchdog { shared })
    }

    /// Terminates the instance behind `terminator` once `deadline` passes, unless the returned
    /// [`Watch`] is dropped first.
    pub fn watch(&self, deadline: Instant, terminator: Terminator) -> Watch {
        let fired = Arc::new(AtomicBool::new(false));
        let mut state = self.shared.lock();
        let key = (deadline, state.next_id);
        state.next_id += 1;
        let earliest = state.watched.keys().next().is_none_or(|first| key < *first);
        state.watched.insert(
            key,
            Entry {
                terminator,
                fired: Arc::clone(&fired),
            },
        );
        drop(state);
        if earliest {
            self.shared.wake.notify_one();
        }
        Watch {
            shared: Arc::clone(&self.shared),
            key,
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

impl Drop for Watch {
    fn drop(&mut self) {
        self.shared.lock().watched.remove(&self.key);
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn run(&self) {
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            let due: Vec<(Instant, u64)> = state
                .watched
                .range(..=(now, u64::MAX))
                .map(|(key, _)| *key)
                .collect();
            for key in due {
                if let Some(entry) = state.watched.remove(&key) {
                    entry.fired.store(true, Ordering::Release);
                    entry.terminator.terminate();
                    tracing::debug!("deadline passed: guest terminated");
                }
            }
            state = match state.watched.keys().next() {
                Some((deadline, _)) => {
                    let wait = deadline.saturating_duration_since(Instant::now());
                    self.wake
                        .wait_timeout(state, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

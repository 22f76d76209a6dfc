//! One thread that acts on running activations when their time comes, the mechanism every
//! backend's time limit shares: wasmer's interrupts, WAMR's terminations and the unblocker's
//! signals are each an [`Expiry`] in a queue of their own.
//!
//! An entry is acted on under the queue's lock, so once its [`Watch`] is dropped (under the
//! same lock) it is never acted on again: the activation may end and its thread go away.
//! A new entry wakes the thread only when it is due before the thread would wake anyway, so an
//! activation's watch costs no thread switch as long as an earlier one is in the queue (an
//! entry taken out leaves the thread's wake-up as it was: the thread then finds nothing due).

use std::{
    collections::BTreeMap,
    sync::{Arc, Condvar, Mutex, MutexGuard},
    time::Instant,
};

use anyhow::Context;

/// What happens to a watched activation when its time comes.
pub trait Expiry: Send + 'static {
    /// Called on the queue's thread once `now` reached the entry's time: acts, and says when
    /// to be called again (`None`: never, the entry is done).
    fn expired(&mut self, now: Instant) -> Option<Instant>;
}

/// A queue and its thread; cheap to clone.
pub struct DeadlineQueue<E> {
    shared: Arc<Shared<E>>,
}

impl<E> Clone for DeadlineQueue<E> {
    fn clone(&self) -> Self {
        DeadlineQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<E> {
    state: Mutex<State<E>>,
    changed: Condvar,
}

struct State<E> {
    /// Watched entries by registration number, with when each is due next.
    entries: BTreeMap<u64, (Instant, E)>,
    next_id: u64,
    /// When the thread wakes next on its own, set by the thread as it goes to sleep; `None`:
    /// only when notified.
    wakes_at: Option<Instant>,
    /// The times the thread looked at its entries, for the tests.
    #[cfg(test)]
    woken: u64,
}

/// Keeps an entry in its queue; dropping it takes the entry out.
pub struct Watch<E> {
    shared: Arc<Shared<E>>,
    id: u64,
}

impl<E: Expiry> DeadlineQueue<E> {
    /// Starts the queue's thread, named `thread_name`.
    pub fn start(thread_name: &str) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                entries: BTreeMap::new(),
                next_id: 0,
                wakes_at: None,
                #[cfg(test)]
                woken: 0,
            }),
            changed: Condvar::new(),
        });
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(thread_name.to_owned())
            .spawn(move || thread_shared.serve())
            .with_context(|| format!("starting the {thread_name} thread"))?;
        Ok(DeadlineQueue { shared })
    }

    /// Calls `entry` once `due` has passed (and again when it asks), until the returned
    /// [`Watch`] is dropped.
    pub fn watch(&self, due: Instant, entry: E) -> Watch<E> {
        let mut state = self.shared.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.entries.insert(id, (due, entry));
        // The thread looks again at when it must wake only if this entry is due before then
        // (no scan of the entries here, on /run).
        let sooner = state.wakes_at.is_none_or(|wakes_at| due < wakes_at);
        drop(state);
        if sooner {
            self.shared.changed.notify_one();
        }
        Watch {
            shared: Arc::clone(&self.shared),
            id,
        }
    }
}

impl<E> Drop for Watch<E> {
    fn drop(&mut self) {
        self.shared.lock().entries.remove(&self.id);
    }
}

impl<E> Shared<E> {
    fn lock(&self) -> MutexGuard<'_, State<E>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<E: Expiry> Shared<E> {
    fn serve(&self) {
        let mut state = self.lock();
        loop {
            #[cfg(test)]
            {
                state.woken += 1;
            }
            let now = Instant::now();
            state.entries.retain(|_, (next, entry)| {
                if *next > now {
                    return true;
                }
                match entry.expired(now) {
                    Some(again) => {
                        *next = again;
                        true
                    }
                    None => false,
                }
            });
            state.wakes_at = state.entries.values().map(|(next, _)| *next).min();
            state = match state.wakes_at {
                Some(next) => {
                    let wait = next.saturating_duration_since(Instant::now());
                    self.changed
                        .wait_timeout(state, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        sync::mpsc::{Sender, channel},
        time::Duration,
    };

    use super::*;

    /// Reports each call and asks to be called `again` more times, 10 ms apart.
    struct Counting {
        calls: Sender<Instant>,
        again: u32,
    }

    impl Expiry for Counting {
        fn expired(&mut self, now: Instant) -> Option<Instant> {
            let _ = self.calls.send(now);
            self.again = self.again.checked_sub(1)?;
            Some(now + Duration::from_millis(10))
        }
    }

    #[test]
    fn entries_are_called_at_their_time_as_often_as_they_ask_and_never_after_their_watch() {
        let queue = DeadlineQueue::start("test-deadlines").unwrap();
        let (late_calls, late) = channel();
        let started = Instant::now();
        let _late = queue.watch(
            started + Duration::from_millis(300),
            Counting {
                calls: late_calls,
                again: 0,
            },
        );
        let (soon_calls, soon) = channel();
        let _soon = queue.watch(
            started + Duration::from_millis(50),
            Counting {
                calls: soon_calls,
                again: 2,
            },
        );
        let times: Vec<Instant> = soon.iter().take(3).collect();
        assert!(times[0] >= started + Duration::from_millis(50));
        assert!(times[2] >= times[0] + Duration::from_millis(20));
        assert!(
            soon.recv_timeout(Duration::from_millis(100)).is_err(),
            "done after three"
        );
        assert!(late.recv().unwrap() >= started + Duration::from_millis(300));

        let (dropped_calls, dropped) = channel();
        let watch = queue.watch(
            Instant::now() + Duration::from_millis(100),
            Counting {
                calls: dropped_calls,
                again: 0,
            },
        );
        drop(watch);
        assert!(dropped.recv_timeout(Duration::from_millis(300)).is_err());
    }

    #[test]
    fn entries_due_after_the_next_wake_up_do_not_wake_the_thread() {
        let queue = DeadlineQueue::start("test-deadlines").unwrap();
        let (calls, called) = channel();
        let first = Instant::now() + Duration::from_secs(60);
        let _first = queue.watch(first, Counting { calls, again: 0 });
        // Bounded: the thread soon sleeps until the first entry's time.
        let asleep = Instant::now() + Duration::from_secs(30);
        let woken = loop {
            let state = queue.shared.lock();
            if state.wakes_at == Some(first) {
                break state.woken;
            }
            drop(state);
            assert!(Instant::now() < asleep, "the thread never went to sleep");
            std::thread::sleep(Duration::from_millis(1));
        };
        let later: Vec<_> = (0..100)
            .map(|i| {
                let (calls, _) = channel();
                queue.watch(
                    first + Duration::from_millis(i),
                    Counting { calls, again: 0 },
                )
            })
            .collect();
        drop(later);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            queue.shared.lock().woken,
            woken,
            "later entries woke the thread"
        );
        let (soon_calls, soon) = channel();
        let _soon = queue.watch(
            Instant::now() + Duration::from_millis(5),
            Counting {
                calls: soon_calls,
                again: 0,
            },
        );
        assert!(
            soon.recv_timeout(Duration::from_secs(30)).is_ok(),
            "a sooner entry is called"
        );
        assert!(called.try_recv().is_err());
    }
}

//! Threads that each serve one connection at a time, for the builds whose guests block the
//! thread they run on (wasmer, WAMR): a guest then runs on its connection's own thread, which
//! HTTP/1.1 would not use for anything else meanwhile, with no async worker to hand over.
//! Each thread has a runtime of its own (current-thread) that its connections' sockets and
//! timers are moved to, so the thread itself waits for its connection's next request, and a
//! request wakes that thread alone. Threads are kept for the next connection and end after a
//! while idle; when all are busy the caller serves the connection on the async workers as
//! before. A guest's host calls wait on the host I/O runtime ([`crate::host_io::wait_for`]).

use std::{
    cell::Cell,
    panic::AssertUnwindSafe,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use crossbeam_channel::RecvTimeoutError;
use tokio::runtime::Runtime;

/// A connection's whole service, made on the thread that serves it, whose runtime its socket
/// is registered with there.
type Connection = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// Descriptors a thread's own runtime holds (tokio's, on Linux): its epoll instance and the
/// clone its driver keeps, its waker's eventfd and its signal driver's socket.
pub const DESCRIPTORS_PER_THREAD: u64 = 4;

/// The threads allowed of `wanted` when the process may open `descriptors`: their runtimes
/// take at most an eighth of them (the connections themselves take up to half).
pub fn within_descriptors(wanted: usize, descriptors: u64) -> usize {
    let affordable = descriptors / 8 / DESCRIPTORS_PER_THREAD;
    wanted.min(usize::try_from(affordable).unwrap_or(usize::MAX))
}

/// A thread's runtime, shut down without waiting for anything wherever it is dropped: also in
/// the accept loop, inside the async runtime, when its thread could not be started (where
/// dropping a runtime would panic).
struct OwnRuntime(Option<Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// How long a thread waits for another connection before it ends.
const IDLE_LIFETIME: Duration = Duration::from_secs(30);

thread_local! {
    /// Whether this thread is a connection thread.
    static CONNECTION_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is a connection thread, the one its connection's guests run on.
pub fn is_current() -> bool {
    CONNECTION_THREAD.get()
}

/// The threads and their hand-off. Every thread waiting for a connection is counted either in
/// `idle` or by a connection sent for it and not yet taken, so a connection sent is taken at
/// once.
pub struct ConnectionThreads {
    connections: crossbeam_channel::Sender<Connection>,
    waiting: crossbeam_channel::Receiver<Connection>,
    /// Threads waiting for a connection that none was promised to.
    idle: AtomicUsize,
    /// Threads alive.
    started: AtomicUsize,
    max_threads: usize,
    idle_lifetime: Duration,
}

impl ConnectionThreads {
    /// At most `max_threads` threads.
    pub fn new(max_threads: usize) -> Arc<Self> {
        Self::with_idle_lifetime(max_threads, IDLE_LIFETIME)
    }

    fn with_idle_lifetime(max_threads: usize, idle_lifetime: Duration) -> Arc<Self> {
        let (connections, waiting) = crossbeam_channel::unbounded();
        Arc::new(ConnectionThreads {
            connections,
            waiting,
            idle: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
            max_threads,
            idle_lifetime,
        })
    }

    /// A thread for the next connection: an idle one, or one started now; `None` when every
    /// thread is busy (or none can be started), and the caller serves the connection itself.
    pub fn reserve(self: &Arc<Self>) -> Option<Reserved<'_>> {
        (take_one(&self.idle) || self.start_thread()).then(|| Reserved(self))
    }

    /// Threads alive, for the metrics.
    pub fn threads(&self) -> usize {
        self.started.load(Ordering::Acquire)
    }

    /// Starts a thread that waits for a connection, if the limit allows one.
    fn start_thread(self: &Arc<Self>) -> bool {
        let mut started = self.started.load(Ordering::Acquire);
        loop {
            if started >= self.max_threads {
                return false;
            }
            match self.started.compare_exchange(
                started,
                started + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => started = now,
            }
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("connection-blocking")
            .build()
            .map(|runtime| OwnRuntime(Some(runtime)));
        let threads = Arc::clone(self);
        let spawned = runtime.and_then(|runtime| {
            std::thread::Builder::new()
                .name("connection".into())
                .spawn(move || threads.serve_connections(runtime))
        });
        if let Err(error) = spawned {
            self.started.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(%error, "starting a connection thread failed");
            return false;
        }
        true
    }

    /// A thread's life: connections one after the other, until none came for a while or one
    /// panicked.
    fn serve_connections(&self, runtime: OwnRuntime) {
        let Some(runtime) = runtime.0.as_ref() else {
            // Never: only a runtime being dropped has none.
            self.started.fetch_sub(1, Ordering::AcqRel);
            return;
        };
        CONNECTION_THREAD.set(true);
        loop {
            match self.waiting.recv_timeout(self.idle_lifetime) {
                Ok(make) => {
                    // A panic ends the connection, as it would end its task on the workers, and
                    // the thread with its runtime; the next connection gets a new one.
                    let served = AssertUnwindSafe(|| runtime.block_on(async { make().await }));
                    if std::panic::catch_unwind(served).is_err() {
                        tracing::error!("serving a connection panicked");
                        self.started.fetch_sub(1, Ordering::AcqRel);
                        return;
                    }
                    self.idle.fetch_add(1, Ordering::AcqRel);
                }
                Err(RecvTimeoutError::Timeout) => {
                    // With no idle count left to take, a connection is on its way here.
                    if take_one(&self.idle) {
                        self.started.fetch_sub(1, Ordering::AcqRel);
                        return;
                    }
                }
                // Never: `self` holds a sender.
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// A thread promised to a connection; dropped unused, it goes back to waiting for one.
pub struct Reserved<'a>(&'a ConnectionThreads);

impl Reserved<'_> {
    /// Serves the connection that `make` makes to its end on the reserved thread. `make` runs
    /// on that thread, in its runtime, where it moves the connection's socket.
    pub fn serve<M, F>(self, make: M)
    where
        M: FnOnce() -> F + Send + 'static,
        F: Future<Output = ()> + 'static,
    {
        let connection: Connection = Box::new(move || Box::pin(make()));
        // Never fails: the threads hold a receiver.
        let _ = self.0.connections.send(connection);
        // The thread is the connection's now: no idle count to give back.
        std::mem::forget(self);
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.0.idle.fetch_add(1, Ordering::AcqRel);
    }
}

/// Takes one from `count` unless it is zero.
fn take_one(count: &AtomicUsize) -> bool {
    count
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread for the next connection, which the test expects to be there.
    fn reserve(threads: &Arc<ConnectionThreads>) -> Reserved<'_> {
        threads.reserve().expect("a thread is free")
    }

    /// Serves a connection that answers `answer()`, computed on its thread, and waits for it.
    async fn served<T: Send + 'static>(
        threads: &Arc<ConnectionThreads>,
        answer: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = tokio::sync::oneshot::channel();
        reserve(threads).serve(move || async move {
            let _ = tx.send(answer());
        });
        rx.await.expect("the connection answers")
    }

    #[test]
    fn threads_take_at_most_an_eighth_of_the_descriptors() {
        assert_eq!(within_descriptors(256, 1 << 20), 256);
        assert_eq!(within_descriptors(256, 1024), 32);
        assert_eq!(within_descriptors(256, 16), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_connection_that_blocks_its_thread_holds_up_no_other() {
        let threads = ConnectionThreads::new(2);
        // The first blocks its thread (a guest that loops) until released.
        let (release, released) = std::sync::mpsc::channel::<()>();
        reserve(&threads).serve(move || async move {
            let _ = released.recv();
        });
        // The second waits on the runtime, then answers.
        let (go, gone) = tokio::sync::oneshot::channel::<()>();
        let (done, answered) = tokio::sync::oneshot::channel();
        reserve(&threads).serve(move || async move {
            let _ = gone.await;
            let _ = done.send(());
        });
        assert!(
            threads.reserve().is_none(),
            "both threads are busy: the caller serves this one"
        );
        assert_eq!(
            threads.idle.load(Ordering::Acquire),
            0,
            "a refused reservation promises no thread"
        );
        go.send(()).unwrap();
        // A bound on a hang, not a timing assertion: the first is still blocked meanwhile.
        tokio::time::timeout(Duration::from_secs(30), answered)
            .await
            .expect("the second connection is served while the first blocks its thread")
            .unwrap();
        release.send(()).unwrap();
        assert_eq!(threads.threads(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_finished_connection_leaves_its_thread_for_the_next() {
        let threads = ConnectionThreads::new(1);
        for _ in 0..20 {
            assert!(
                served(&threads, is_current).await,
                "the connection runs on a connection thread"
            );
            // The thread counts itself idle just after the connection's end.
            while threads.idle.load(Ordering::Acquire) == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        assert_eq!(threads.threads(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_panicking_connection_ends_alone() {
        let threads = ConnectionThreads::new(1);
        reserve(&threads).serve(|| async { panic!("a bug") });
        // The thread ends with its runtime; the next connection starts another.
        while threads.threads() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        served(&threads, || ()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_idle_thread_ends_and_a_new_one_starts_when_needed() {
        let threads = ConnectionThreads::with_idle_lifetime(1, Duration::from_millis(20));
        for _ in 0..2 {
            served(&threads, || ()).await;
            // A bound on a hang: the thread ends once idle for its lifetime.
            tokio::time::timeout(Duration::from_secs(30), async {
                while threads.threads() > 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await
            .expect("the idle thread ends");
            assert_eq!(threads.idle.load(Ordering::Acquire), 0);
        }
    }
}

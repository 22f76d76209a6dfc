//! The bounded pool that runs blocking guest work (instantiation, execution, compilation) off
//! the async workers, with admission control: a fixed number of slots, a bounded wait queue,
//! and an immediate "overloaded" answer beyond it (the executor turns it into a 503).
//! The same slots admit guests that run on their request's own task (`--guest-execution
//! async`): such a guest holds a [`CpuSlot`] while it computes and gives it back while it
//! waits, and an instance permit for its whole life. `--guest-execution blocking-worker` keeps
//! the admission control but makes the async worker block while the guest runs, for the
//! evaluation's comparison of threading models.

use std::{
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::config::GuestExecution;

type Job = Box<dyn FnOnce() + Send>;

#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("the executor is at capacity ({running} running, {queued} queued); retry elsewhere")]
    Overloaded { running: usize, queued: usize },
    #[error("the worker running this job failed")]
    WorkerLost,
}

pub struct ExecutionPool {
    slots: Arc<Semaphore>,
    /// Instances of guests that run on their request's task, alive at once.
    instances: Arc<Semaphore>,
    max_instances: usize,
    max_running: usize,
    queued: AtomicUsize,
    queue_depth: usize,
    jobs: crossbeam_channel::Sender<Job>,
    mode: GuestExecution,
}

/// Releases a queue place however the waiting future ends (including client disconnects).
struct QueuePlace<'a>(&'a AtomicUsize);

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A guest's claim on one of the pool's slots while it runs on its request's task: held while
/// the guest computes, given back while it waits on a timer or the network.
#[cfg_attr(
    not(feature = "wasmtime"),
    allow(dead_code, reason = "only wasmtime suspends its guests")
)]
pub struct CpuSlot {
    slots: Arc<Semaphore>,
    held: Option<OwnedSemaphorePermit>,
}

impl CpuSlot {
    /// Awaits `wait` without the slot, then takes a slot again (waiting for one, never
    /// refused: the guest was admitted before).
    #[cfg_attr(
        not(feature = "wasmtime"),
        allow(dead_code, reason = "only wasmtime suspends its guests")
    )]
    pub async fn released_during<F: Future>(&mut self, wait: F) -> F::Output {
        self.held = None;
        let output = wait.await;
        // The semaphore is never closed; a guest that somehow got no permit runs without one.
        self.held = Arc::clone(&self.slots).acquire_owned().await.ok();
        output
    }
}

/// What a guest that runs on its request's task holds: its instance, and a CPU slot (which it
/// hands to the backend).
pub struct TaskAdmission {
    pub instance: OwnedSemaphorePermit,
    pub cpu: CpuSlot,
}

impl ExecutionPool {
    /// `max_instances` bounds the guests on their requests' tasks (running, waiting for a slot
    /// or waiting on I/O); the pool's own jobs are bounded by the `max_running` slots.
    pub fn new(
        threads: usize,
        max_running: usize,
        max_instances: usize,
        queue_depth: usize,
        mode: GuestExecution,
    ) -> anyhow::Result<Self> {
        // A multi-consumer channel: idle workers wait on it directly, with no lock to contend
        // for on every hand-off.
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        for index in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("guest-{index}"))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })?;
        }
        Ok(ExecutionPool {
            slots: Arc::new(Semaphore::new(max_running.max(1))),
            instances: Arc::new(Semaphore::new(max_instances.max(1))),
            max_instances: max_instances.max(1),
            max_running: max_running.max(1),
            queued: AtomicUsize::new(0),
            queue_depth,
            jobs: tx,
            mode,
        })
    }

    /// Admits a guest that will run on its request's task: an instance at once (or
    /// `Overloaded`), then a CPU slot, waiting in the bounded queue if needed.
    pub async fn admit_task(&self) -> Result<TaskAdmission, PoolError> {
        let instance = Arc::clone(&self.instances)
            .try_acquire_owned()
            .map_err(|_| PoolError::Overloaded {
                running: self.running(),
                queued: self.queued(),
            })?;
        let permit = self.admit().await?;
        Ok(TaskAdmission {
            instance,
            cpu: CpuSlot {
                slots: Arc::clone(&self.slots),
                held: Some(permit),
            },
        })
    }

    /// Runs `job` on a pool thread once a slot is free, waiting in the bounded queue if needed.
    ///
    /// In `GuestExecution::BlockingWorker` the calling async worker then blocks until the job
    /// is done instead of awaiting it, so it serves nothing else meanwhile (the design the pool
    /// replaced, kept for the evaluation). The job still runs on a pool thread rather than on
    /// the worker itself: a guest on a blocking thread is driven with `block_on`, which panics
    /// on a runtime worker. Both modes thus pay the
    /// same hand-off and differ only in whether the worker is free while the guest runs.
    pub async fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, PoolError> {
        let permit = self.admit().await?;
        match self.mode {
            GuestExecution::Pool | GuestExecution::Async => {
                let (tx, rx) = oneshot::channel();
                self.dispatch(job, permit, move |result| {
                    let _ = tx.send(result);
                })?;
                rx.await.map_err(|_| PoolError::WorkerLost)?
            }
            GuestExecution::BlockingWorker => {
                let (tx, rx) = crossbeam_channel::bounded(1);
                self.dispatch(job, permit, move |result| {
                    let _ = tx.send(result);
                })?;
                rx.recv().map_err(|_| PoolError::WorkerLost)?
            }
        }
    }

    /// Hands an admitted job to the pool threads; `reply` gets its result or `WorkerLost`.
    fn dispatch<R>(
        &self,
        job: impl FnOnce() -> R + Send + 'static,
        permit: OwnedSemaphorePermit,
        reply: impl FnOnce(Result<R, PoolError>) + Send + 'static,
    ) -> Result<(), PoolError> {
        let job: Job = Box::new(move || reply(run_admitted(job, permit)));
        self.jobs.send(job).map_err(|_| PoolError::WorkerLost)
    }

    async fn admit(&self) -> Result<OwnedSemaphorePermit, PoolError> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Ok(permit);
        }
        let waiting = self.queued.fetch_add(1, Ordering::AcqRel);
        let place = QueuePlace(&self.queued);
        if waiting >= self.queue_depth {
            drop(place);
            return Err(PoolError::Overloaded {
                running: self.running(),
                queued: waiting,
            });
        }
        let permit = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(|_| PoolError::WorkerLost)?;
        drop(place);
        Ok(permit)
    }

    /// Guests alive on their requests' tasks.
    pub fn task_instances(&self) -> usize {
        self.max_instances - self.instances.available_permits()
    }

    pub fn running(&self) -> usize {
        self.max_running - self.slots.available_permits()
    }

    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }
}

/// Runs an admitted job and gives its slot back however it ends. A panicking job is reported
/// as a lost worker (an internal error) and leaves the pool thread alive for the next job.
fn run_admitted<R>(job: impl FnOnce() -> R, permit: OwnedSemaphorePermit) -> Result<R, PoolError> {
    let result = std::panic::catch_unwind(AssertUnwindSafe(job));
    drop(permit);
    result.map_err(|_| PoolError::WorkerLost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// One slot, one queue place: a second job waits, a third is refused, and both admitted
    /// jobs get their results.
    async fn overload_is_refused_not_queued_forever(mode: GuestExecution) {
        let pool = Arc::new(ExecutionPool::new(1, 1, 1, 1, mode).unwrap());
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let busy = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(move || release_rx.recv().ok()).await })
        };
        while pool.running() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let queued = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(|| 7).await })
        };
        while pool.queued() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(matches!(
            pool.run(|| 8).await,
            Err(PoolError::Overloaded { .. })
        ));
        release_tx.send(()).unwrap();
        assert!(busy.await.unwrap().is_ok());
        assert_eq!(queued.await.unwrap().unwrap(), 7);
        assert_eq!(pool.queued(), 0);
        assert_eq!(pool.running(), 0);
    }

    /// A panicking job is a lost worker, gives its slot back, and the (single) pool thread
    /// runs the next job.
    async fn a_panicking_job_frees_its_slot(mode: GuestExecution) {
        let pool = ExecutionPool::new(1, 1, 1, 0, mode).unwrap();
        let lost = pool.run(|| -> u32 { panic!("guest job panics (expected by this test)") });
        assert!(matches!(lost.await, Err(PoolError::WorkerLost)));
        assert_eq!(pool.running(), 0);
        assert_eq!(pool.run(|| 9).await.unwrap(), 9);
    }

    #[tokio::test]
    async fn pool_mode_refuses_overload() {
        overload_is_refused_not_queued_forever(GuestExecution::Pool).await;
    }

    #[tokio::test]
    async fn pool_mode_survives_a_panicking_job() {
        a_panicking_job_frees_its_slot(GuestExecution::Pool).await;
    }

    /// A guest on its task gives its slot back while it waits: another guest is admitted to
    /// the only slot meanwhile, and the first takes a slot again when its wait is over. Beyond
    /// the instances, a guest is refused at once.
    #[tokio::test]
    async fn a_waiting_task_guest_frees_its_slot_but_keeps_its_instance() {
        let pool = Arc::new(ExecutionPool::new(1, 1, 2, 0, GuestExecution::Async).unwrap());
        let mut first = pool.admit_task().await.unwrap();
        assert_eq!(pool.running(), 1);
        let (wake_tx, wake_rx) = oneshot::channel::<()>();
        let waiting = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move {
                first.cpu.released_during(wake_rx).await.unwrap();
                assert_eq!(pool.running(), 1, "the slot is taken again after the wait");
                first
            })
        };
        while pool.running() == 1 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let second = pool.admit_task().await.unwrap();
        assert_eq!((pool.running(), pool.task_instances()), (1, 2));
        assert!(matches!(
            pool.admit_task().await,
            Err(PoolError::Overloaded { .. })
        ));
        wake_tx.send(()).unwrap();
        drop(second);
        let first = waiting.await.unwrap();
        drop(first);
        assert_eq!((pool.running(), pool.task_instances()), (0, 0));
    }

    // Blocking-worker mode blocks the worker that runs `busy` until the job ends: two workers, so the
    // queued job can still wait for its slot on the other one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_worker_mode_refuses_overload() {
        overload_is_refused_not_queued_forever(GuestExecution::BlockingWorker).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_worker_mode_survives_a_panicking_job() {
        a_panicking_job_frees_its_slot(GuestExecution::BlockingWorker).await;
    }

    /// In blocking-worker mode the job's result comes back on the calling worker, which stays busy (no
    /// other task runs on it) until the job is done.
    #[tokio::test(flavor = "current_thread")]
    async fn blocking_worker_mode_blocks_the_calling_worker() {
        let pool = ExecutionPool::new(1, 1, 1, 0, GuestExecution::BlockingWorker).unwrap();
        let ticks = Arc::new(AtomicUsize::new(0));
        let ticker = {
            let ticks = Arc::clone(&ticks);
            tokio::spawn(async move {
                loop {
                    ticks.fetch_add(1, Ordering::AcqRel);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let before = ticks.load(Ordering::Acquire);
        let result = pool
            .run(|| {
                std::thread::sleep(Duration::from_millis(100));
                42
            })
            .await;
        assert_eq!(result.unwrap(), 42);
        assert_eq!(
            ticks.load(Ordering::Acquire),
            before,
            "no other task ran on the worker while the guest job ran"
        );
        assert_eq!(pool.running(), 0);
        ticker.abort();
    }
}

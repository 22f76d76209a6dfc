//! The bounded pool that runs blocking guest work (instantiation, execution, compilation) off
//! the async workers, with admission control: a fixed number of CPU slots, a bounded wait
//! queue, and an immediate "overloaded" answer beyond it (the executor turns it into a 503).
//! A job on the pool holds a thread for its whole life and a [`CpuSlot`] only while it
//! computes: a guest waiting on a timer or the network gives its slot back, so the threads
//! (`--pool-threads`) may outnumber the slots (`--max-concurrent`). Admission takes a thread
//! before a slot, so an admitted job always finds a thread and a waking guest always gets a
//! slot back from a job that is running. A job's thread is the one its request was served on:
//! a connection thread of its own (`--connection-threads`), or an async worker whose other
//! tasks the runtime hands to another thread for as long as the job runs.
//! The same slots admit guests that run on their request's own task (`--guest-execution
//! async`): such a guest holds a [`CpuSlot`] while it computes and gives it back while it
//! waits, and an instance permit for its whole life. `--guest-execution blocking-worker` keeps
//! the admission control but runs each job on a thread of the pool's own while the async
//! worker that took the request blocks, for the evaluation's comparison of threading models.

use std::{
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Instant,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::{config::GuestExecution, connection_threads, host_io::park_until};

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
    /// Jobs on the pool (queued for a thread or on one), at most one per thread.
    threads: Arc<Semaphore>,
    max_threads: usize,
    /// Threads started so far; never more than the jobs that were on the pool at once.
    started: AtomicUsize,
    /// Instances of guests that run on their request's task, alive at once.
    instances: Arc<Semaphore>,
    max_instances: usize,
    max_running: usize,
    queued: AtomicUsize,
    queue_depth: usize,
    jobs: crossbeam_channel::Sender<Job>,
    /// What a newly started thread takes jobs from.
    job_source: crossbeam_channel::Receiver<Job>,
    mode: GuestExecution,
}

/// How full the pool is, for `GET /metrics`.
pub struct Occupancy {
    /// Slots held: jobs computing on the pool, guests computing on their tasks.
    pub running: usize,
    /// Jobs and guests waiting for a thread or a slot in the bounded queue.
    pub queued: usize,
    /// Jobs holding one of the pool's threads: waiting for a slot, computing, or waiting on a
    /// timer or the network without a slot.
    pub pool_guests: usize,
    /// Guests alive on their requests' tasks.
    pub task_guests: usize,
}

/// Releases a queue place however the waiting future ends (including client disconnects).
struct QueuePlace<'a>(&'a AtomicUsize);

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A guest's claim on one of the pool's slots: held while the guest computes, given back
/// while it waits on a timer or the network.
pub struct CpuSlot {
    slots: Arc<Semaphore>,
    held: Option<OwnedSemaphorePermit>,
}

impl CpuSlot {
    /// Awaits `wait` without the slot, then takes a slot again (waiting for one, never
    /// refused: the guest was admitted before).
    pub async fn released_during<F: Future>(&mut self, wait: F) -> F::Output {
        self.held = None;
        let output = wait.await;
        // The semaphore is never closed; a guest that somehow got no permit runs without one.
        self.held = Arc::clone(&self.slots).acquire_owned().await.ok();
        output
    }

    /// [`CpuSlot::released_during`] for a guest on a pool thread: runs the blocking `wait`
    /// without the slot, then blocks until a slot is free again, or until `deadline`: a guest
    /// past its deadline goes on without one, to be stopped at its next deadline check.
    pub fn released_while<R>(&mut self, deadline: Instant, wait: impl FnOnce() -> R) -> R {
        self.held = None;
        let output = wait();
        self.held = park_until(Arc::clone(&self.slots).acquire_owned(), Some(deadline))
            .and_then(Result::ok);
        output
    }
}

/// The pool a [`CpuSlot`] is of: where a job that runs two guests one after the other takes
/// the second one's slot once the first gave its slot back.
pub struct CpuSlots(Arc<Semaphore>);

impl CpuSlots {
    /// A slot of this pool, waiting for one until `deadline` (past it, the guest runs without
    /// one, to be stopped at its first deadline check).
    pub fn take_until(&self, deadline: Instant) -> CpuSlot {
        CpuSlot {
            slots: Arc::clone(&self.0),
            held: park_until(Arc::clone(&self.0).acquire_owned(), Some(deadline))
                .and_then(Result::ok),
        }
    }
}

impl CpuSlot {
    /// The pool this slot is of.
    pub fn pool(&self) -> CpuSlots {
        CpuSlots(Arc::clone(&self.slots))
    }

    /// A slot of a pool of its own, for host state that runs no guest (an import probe) or
    /// runs one alone (tests).
    pub fn detached() -> Self {
        let slots = Arc::new(Semaphore::new(1));
        let held = Arc::clone(&slots).try_acquire_owned().ok();
        CpuSlot { slots, held }
    }
}

/// What a guest that runs on its request's task holds: its instance, and a CPU slot (which it
/// hands to the backend).
pub struct TaskAdmission {
    pub instance: OwnedSemaphorePermit,
    pub cpu: CpuSlot,
}

impl ExecutionPool {
    /// `threads` bounds the jobs on the pool (computing or waiting), `max_running` those
    /// computing (with the guests on their tasks); `max_instances` bounds the guests on their
    /// requests' tasks (running, waiting for a slot or waiting on I/O).
    pub fn new(
        threads: usize,
        max_running: usize,
        max_instances: usize,
        queue_depth: usize,
        mode: GuestExecution,
    ) -> Self {
        // A multi-consumer channel: idle workers wait on it directly, with no lock to contend
        // for on every hand-off.
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        ExecutionPool {
            slots: Arc::new(Semaphore::new(max_running.max(1))),
            threads: Arc::new(Semaphore::new(threads.max(1))),
            max_threads: threads.max(1),
            started: AtomicUsize::new(0),
            instances: Arc::new(Semaphore::new(max_instances.max(1))),
            max_instances: max_instances.max(1),
            max_running: max_running.max(1),
            queued: AtomicUsize::new(0),
            queue_depth,
            jobs: tx,
            job_source: rx,
            mode,
        }
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
        let (_, permit) = self.admit(false).await?;
        Ok(TaskAdmission {
            instance,
            cpu: self.cpu_slot(permit),
        })
    }

    /// Runs `job` once a thread and a slot are free, waiting in the bounded queue if needed.
    /// The job gets the slot, to give back while it waits. For jobs that end on their own
    /// (a guest stops at its deadline): the caller waits for the job's end however long.
    ///
    /// In `GuestExecution::Pool` (and `Async`, for the jobs that do not run on their task) the
    /// job runs on the calling thread, so a guest that loops starves no other request, and the
    /// request pays no hand-off to another thread and back. On a connection thread (see
    /// [`crate::connection_threads`]) that thread and its runtime are the connection's alone
    /// and the job simply runs there; on an async worker it runs in
    /// [`tokio::task::block_in_place`], and the runtime hands the worker's other tasks to
    /// another thread for as long as the job runs. The thread permit still bounds the jobs at
    /// once, and with them the runtime's blocking threads (see [`blocking_threads`]). Outside
    /// both (where that hand-over is impossible) the job goes to a pool thread of its own.
    ///
    /// In `GuestExecution::BlockingWorker` the job goes to a pool thread and the calling async
    /// worker blocks until it is done instead of awaiting it, so it serves nothing else
    /// meanwhile (the design the pool replaced, kept for the evaluation).
    pub async fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce(CpuSlot) -> R + Send + 'static,
    ) -> Result<R, PoolError> {
        let in_place = self.mode != GuestExecution::BlockingWorker
            && (connection_threads::is_current() || hands_over_its_tasks());
        self.run_admitted_job(job, in_place).await
    }

    /// [`ExecutionPool::run`] on a pool thread of its own, for a job its caller may stop
    /// waiting for (a time limit, a client gone) while it goes on to its end, as a module's
    /// compilation does, which nothing can interrupt.
    pub async fn run_apart<R: Send + 'static>(
        &self,
        job: impl FnOnce(CpuSlot) -> R + Send + 'static,
    ) -> Result<R, PoolError> {
        self.run_admitted_job(job, false).await
    }

    async fn run_admitted_job<R: Send + 'static>(
        &self,
        job: impl FnOnce(CpuSlot) -> R + Send + 'static,
        in_place: bool,
    ) -> Result<R, PoolError> {
        let (thread, permit) = self.admit(true).await?;
        let admitted = Admitted {
            thread,
            cpu: self.cpu_slot(permit),
        };
        if in_place && connection_threads::is_current() {
            return run_admitted(job, admitted);
        }
        if in_place {
            return tokio::task::block_in_place(move || run_admitted(job, admitted));
        }
        if self.mode == GuestExecution::BlockingWorker {
            let (tx, rx) = crossbeam_channel::bounded(1);
            self.dispatch(job, admitted, move |result| {
                let _ = tx.send(result);
            })?;
            return rx.recv().map_err(|_| PoolError::WorkerLost)?;
        }
        let (tx, rx) = oneshot::channel();
        self.dispatch(job, admitted, move |result| {
            let _ = tx.send(result);
        })?;
        rx.await.map_err(|_| PoolError::WorkerLost)?
    }

    fn cpu_slot(&self, permit: OwnedSemaphorePermit) -> CpuSlot {
        CpuSlot {
            slots: Arc::clone(&self.slots),
            held: Some(permit),
        }
    }

    /// Hands an admitted job to the pool threads; `reply` gets its result or `WorkerLost`.
    fn dispatch<R>(
        &self,
        job: impl FnOnce(CpuSlot) -> R + Send + 'static,
        admitted: Admitted,
        reply: impl FnOnce(Result<R, PoolError>) + Send + 'static,
    ) -> Result<(), PoolError> {
        self.start_threads()?;
        let job: Job = Box::new(move || reply(run_admitted(job, admitted)));
        self.jobs.send(job).map_err(|_| PoolError::WorkerLost)
    }

    /// Starts threads until there is one for every job on the pool (each holds a thread
    /// permit from admission until it ends, so a queued job always finds a thread).
    /// No lock: once the threads are there (every job but the first few), one atomic read.
    fn start_threads(&self) -> Result<(), PoolError> {
        let on_pool = self.pool_guests();
        let mut started = self.started.load(Ordering::Acquire);
        while started < on_pool {
            if let Err(now) = self.started.compare_exchange(
                started,
                started + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                started = now;
                continue;
            }
            let jobs = self.job_source.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("guest-{started}"))
                .spawn(move || {
                    while let Ok(job) = jobs.recv() {
                        job();
                    }
                });
            if let Err(error) = spawned {
                self.started.fetch_sub(1, Ordering::AcqRel);
                tracing::error!(%error, "starting a pool thread failed");
                return Err(PoolError::WorkerLost);
            }
            started += 1;
        }
        Ok(())
    }

    /// Takes a thread (for a pool job) and a slot: at once if both are free, else waiting
    /// in the bounded queue, or refused when it is full.
    async fn admit(
        &self,
        with_thread: bool,
    ) -> Result<(Option<OwnedSemaphorePermit>, OwnedSemaphorePermit), PoolError> {
        let thread = || -> Result<Option<OwnedSemaphorePermit>, ()> {
            if with_thread {
                Arc::clone(&self.threads)
                    .try_acquire_owned()
                    .map(Some)
                    .map_err(drop)
            } else {
                Ok(None)
            }
        };
        if let Ok(thread) = thread()
            && let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned()
        {
            return Ok((thread, slot));
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
        let thread = if with_thread {
            Some(
                Arc::clone(&self.threads)
                    .acquire_owned()
                    .await
                    .map_err(|_| PoolError::WorkerLost)?,
            )
        } else {
            None
        };
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(|_| PoolError::WorkerLost)?;
        drop(place);
        Ok((thread, slot))
    }

    /// Guests alive on their requests' tasks.
    pub fn task_instances(&self) -> usize {
        self.max_instances - self.instances.available_permits()
    }

    /// Jobs holding one of the pool's threads (see [`Occupancy::pool_guests`]).
    pub fn pool_guests(&self) -> usize {
        self.max_threads - self.threads.available_permits()
    }

    pub fn running(&self) -> usize {
        self.max_running - self.slots.available_permits()
    }

    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    pub fn occupancy(&self) -> Occupancy {
        Occupancy {
            running: self.running(),
            queued: self.queued(),
            pool_guests: self.pool_guests(),
            task_guests: self.task_instances(),
        }
    }
}

/// Whether the calling thread is in a multi-threaded runtime, which can hand a worker's tasks
/// to another thread while a job blocks this one.
fn hands_over_its_tasks() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|runtime| runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// The blocking threads the async runtime needs for a pool of `pool_threads`: each job in
/// [`ExecutionPool::run`] keeps its thread and has the runtime start (or reuse) another to
/// take over that thread's tasks, beside the runtime's other blocking work (for which tokio's
/// own default, 512, is kept).
pub fn blocking_threads(pool_threads: usize) -> usize {
    pool_threads.saturating_add(512)
}

/// What an admitted pool job holds: its thread, and its CPU slot (which the job may give back
/// while it waits).
struct Admitted {
    thread: Option<OwnedSemaphorePermit>,
    cpu: CpuSlot,
}

/// Runs an admitted job and gives its slot and thread back however it ends. A panicking job
/// is reported as a lost worker (an internal error) and leaves the pool thread alive for the
/// next job.
fn run_admitted<R>(job: impl FnOnce(CpuSlot) -> R, admitted: Admitted) -> Result<R, PoolError> {
    let Admitted { thread, cpu } = admitted;
    let result = std::panic::catch_unwind(AssertUnwindSafe(move || job(cpu)));
    drop(thread);
    result.map_err(|_| PoolError::WorkerLost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Waits until `condition` holds; a test whose pool never gets there fails, not hangs.
    async fn until(condition: impl Fn() -> bool) {
        let give_up = Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(
                Instant::now() < give_up,
                "the pool never reached the awaited state"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// One slot, one queue place: a second job waits, a third is refused, and both admitted
    /// jobs get their results.
    async fn overload_is_refused_not_queued_forever(mode: GuestExecution) {
        let pool = Arc::new(ExecutionPool::new(1, 1, 1, 1, mode));
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let busy = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(move |_| release_rx.recv().ok()).await })
        };
        until(|| pool.running() != 0).await;
        let queued = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(|_| 7).await })
        };
        until(|| pool.queued() != 0).await;
        assert!(matches!(
            pool.run(|_| 8).await,
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
        let pool = ExecutionPool::new(1, 1, 1, 0, mode);
        let lost = pool.run(|_| -> u32 { panic!("guest job panics (expected by this test)") });
        assert!(matches!(lost.await, Err(PoolError::WorkerLost)));
        assert_eq!(pool.running(), 0);
        assert_eq!(pool.run(|_| 9).await.unwrap(), 9);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pool_mode_refuses_overload() {
        overload_is_refused_not_queued_forever(GuestExecution::Pool).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pool_mode_survives_a_panicking_job() {
        a_panicking_job_frees_its_slot(GuestExecution::Pool).await;
    }

    /// A guest on its task gives its slot back while it waits: another guest is admitted to
    /// the only slot meanwhile, and the first takes a slot again when its wait is over. Beyond
    /// the instances, a guest is refused at once.
    #[tokio::test]
    async fn a_waiting_task_guest_frees_its_slot_but_keeps_its_instance() {
        let pool = Arc::new(ExecutionPool::new(1, 1, 2, 0, GuestExecution::Async));
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
        until(|| pool.running() != 1).await;
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

    /// A pool of two threads and one slot, with a job asleep without its slot (its wait ends
    /// when `wake` is used; it answers whether it got a slot back before `deadline`) and then
    /// a second job computing with the slot (until `release` is used).
    struct SleeperAndHolder {
        pool: Arc<ExecutionPool>,
        wake: std::sync::mpsc::Sender<()>,
        sleeper: tokio::task::JoinHandle<Result<bool, PoolError>>,
        release: std::sync::mpsc::Sender<()>,
        holder: tokio::task::JoinHandle<Result<Option<()>, PoolError>>,
    }

    async fn sleeper_and_holder(deadline: Instant) -> SleeperAndHolder {
        let pool = Arc::new(ExecutionPool::new(2, 1, 1, 4, GuestExecution::Pool));
        let (wake, wake_rx) = std::sync::mpsc::channel::<()>();
        let sleeper = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move {
                pool.run(move |mut cpu| {
                    cpu.released_while(deadline, || wake_rx.recv().ok());
                    cpu.held.is_some()
                })
                .await
            })
        };
        until(|| pool.pool_guests() == 1 && pool.running() == 0).await;
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(move |_| release_rx.recv().ok()).await })
        };
        until(|| pool.running() != 0).await;
        SleeperAndHolder {
            pool,
            wake,
            sleeper,
            release,
            holder,
        }
    }

    /// A job on a pool thread gives its slot back while it waits: with one slot and two
    /// threads, a second job computes meanwhile, and the first takes the slot again after.
    /// A third job, with both threads taken, waits for a thread in the queue (never for a
    /// thread while holding the slot the sleepers need: no deadlock).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_pool_job_frees_its_slot_but_keeps_its_thread() {
        let jobs = sleeper_and_holder(Instant::now() + Duration::from_secs(60)).await;
        let pool = Arc::clone(&jobs.pool);
        let third = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.run(|_| 3).await })
        };
        until(|| pool.queued() != 0).await;
        assert_eq!((pool.pool_guests(), pool.running()), (2, 1));
        jobs.wake.send(()).unwrap();
        // The sleeper now waits for the slot the computing job holds.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!jobs.sleeper.is_finished());
        jobs.release.send(()).unwrap();
        assert!(jobs.holder.await.unwrap().is_ok());
        assert!(
            jobs.sleeper.await.unwrap().unwrap(),
            "the slot was taken again"
        );
        assert_eq!(third.await.unwrap().unwrap(), 3);
        assert_eq!(
            (pool.pool_guests(), pool.running(), pool.queued()),
            (0, 0, 0)
        );
    }

    /// A guest past its deadline does not wait for a slot: it goes on without one, to be
    /// stopped by its deadline check.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_late_pool_job_does_not_wait_for_a_slot() {
        let jobs = sleeper_and_holder(Instant::now() + Duration::from_millis(50)).await;
        // Woken while the other job holds the only slot, and keeps it.
        jobs.wake.send(()).unwrap();
        assert!(
            !jobs.sleeper.await.unwrap().unwrap(),
            "went on without a slot"
        );
        jobs.release.send(()).unwrap();
        assert!(jobs.holder.await.unwrap().is_ok());
        assert_eq!(jobs.pool.running(), 0);
    }

    /// A task that counts a tick every millisecond while the runtime lets it run: its count,
    /// and its handle (to abort it).
    fn ticker() -> (Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
        let ticks = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&ticks);
        let task = tokio::spawn(async move {
            loop {
                counted.fetch_add(1, Ordering::AcqRel);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        (ticks, task)
    }

    /// Outside a multi-threaded runtime, pool threads start as jobs need them, one per job
    /// on the pool at most.
    #[tokio::test(flavor = "current_thread")]
    async fn threads_start_on_demand() {
        let pool = ExecutionPool::new(64, 4, 1, 0, GuestExecution::Pool);
        assert_eq!(pool.started.load(Ordering::Acquire), 0);
        for _ in 0..3 {
            assert_eq!(pool.run(|_| 1).await.unwrap(), 1);
        }
        assert_eq!(pool.started.load(Ordering::Acquire), 1);
    }

    /// In a multi-threaded runtime a pool job runs on the calling worker's thread (no
    /// hand-off, no pool thread started), and the runtime serves its other tasks meanwhile,
    /// even with a single worker.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_pool_job_runs_in_place_and_blocks_no_other_task() {
        let pool = Arc::new(ExecutionPool::new(4, 4, 1, 0, GuestExecution::Pool));
        let (ticks, ticker) = ticker();
        // On the only worker (the test's own body runs on another thread).
        let (caller, (job_thread, ticks_during_job)) = {
            let (pool, ticks) = (Arc::clone(&pool), Arc::clone(&ticks));
            tokio::spawn(async move {
                let caller = std::thread::current().id();
                let job = pool.run(move |_| {
                    let before = ticks.load(Ordering::Acquire);
                    std::thread::sleep(Duration::from_millis(200));
                    (
                        std::thread::current().id(),
                        ticks.load(Ordering::Acquire) - before,
                    )
                });
                (caller, job.await.unwrap())
            })
            .await
            .unwrap()
        };
        assert_eq!(job_thread, caller, "the job ran on the calling thread");
        assert!(
            ticks_during_job > 0,
            "another task ran while the job blocked the only worker's thread"
        );
        assert_eq!(pool.started.load(Ordering::Acquire), 0);
        assert_eq!((pool.running(), pool.pool_guests()), (0, 0));
        ticker.abort();
    }

    /// A job run apart lets its caller stop waiting (a time limit) while it goes on; it
    /// gives its slot and thread back when it ends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_stops_waiting_for_a_job_run_apart() {
        let pool = ExecutionPool::new(4, 4, 1, 0, GuestExecution::Pool);
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let waited = tokio::time::timeout(
            Duration::from_millis(20),
            pool.run_apart(move |_| release_rx.recv().ok()),
        )
        .await;
        assert!(waited.is_err(), "the caller stopped waiting at its limit");
        assert_eq!((pool.running(), pool.pool_guests()), (1, 1));
        release.send(()).unwrap();
        until(|| pool.running() == 0 && pool.pool_guests() == 0).await;
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
        let pool = ExecutionPool::new(1, 1, 1, 0, GuestExecution::BlockingWorker);
        let (ticks, ticker) = ticker();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let before = ticks.load(Ordering::Acquire);
        let result = pool
            .run(|_| {
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

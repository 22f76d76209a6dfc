//! The bounded pool that runs blocking guest work (instantiation, execution, compilation) off
//! the async workers, with admission control: a fixed number of slots, a bounded wait queue,
//! and an immediate "overloaded" answer beyond it (the executor turns it into a 503).

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

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
    max_running: usize,
    queued: AtomicUsize,
    queue_depth: usize,
    jobs: crossbeam_channel::Sender<Job>,
}

/// Releases a queue place however the waiting future ends (including client disconnects).
struct QueuePlace<'a>(&'a AtomicUsize);

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ExecutionPool {
    pub fn new(threads: usize, max_running: usize, queue_depth: usize) -> anyhow::Result<Self> {
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
            max_running: max_running.max(1),
            queued: AtomicUsize::new(0),
            queue_depth,
            jobs: tx,
        })
    }

    /// Runs `job` on a pool thread once a slot is free, waiting in the bounded queue if needed.
    pub async fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, PoolError> {
        let permit = self.admit().await?;
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let result = job();
            drop(permit);
            let _ = tx.send(result);
        });
        self.jobs.send(job).map_err(|_| PoolError::WorkerLost)?;
        rx.await.map_err(|_| PoolError::WorkerLost)
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

    pub fn running(&self) -> usize {
        self.max_running - self.slots.available_permits()
    }

    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn overload_is_refused_not_queued_forever() {
        let pool = Arc::new(ExecutionPool::new(1, 1, 1).unwrap());
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
    }
}

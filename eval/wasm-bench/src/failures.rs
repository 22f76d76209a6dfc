//! Failures that must not vanish into the log: client threads and tasks that panicked,
//! containers that could not be removed (counted, so that a run can fail on them), and pauses
//! that failed (counted and recorded: the container stays warm, so nothing is lost).

use std::{
    any::Any,
    sync::atomic::{AtomicUsize, Ordering},
    thread::ScopedJoinHandle,
};

use anyhow::bail;

static HOUSEKEEPING: AtomicUsize = AtomicUsize::new(0);
static SUSPENSIONS_FAILED: AtomicUsize = AtomicUsize::new(0);

/// Logs and counts a failed housekeeping operation on a container (`what`: "removing an idle
/// container", …).
pub fn housekeeping(what: &str, error: &anyhow::Error) {
    tracing::warn!(%error, "{what} failed");
    HOUSEKEEPING.fetch_add(1, Ordering::Relaxed);
}

/// Housekeeping failures since the process started.
pub fn housekeeping_count() -> usize {
    HOUSEKEEPING.load(Ordering::Relaxed)
}

/// Logs and counts a pause of an idle container that failed; the container stays warm and in
/// the pool (Docker's freezer can fail to freeze a container of an overloaded machine in time).
pub fn suspension_failed(error: &anyhow::Error) {
    tracing::warn!(%error, "suspending an idle container failed; it stays warm");
    SUSPENSIONS_FAILED.fetch_add(1, Ordering::Relaxed);
}

/// Failed pauses since the process started.
pub fn suspensions_failed_count() -> usize {
    SUSPENSIONS_FAILED.load(Ordering::Relaxed)
}

/// Joins every thread; if any panicked, an error with each panic's message (`what` names the
/// threads, e.g. "client").
pub fn join_all<'scope, T>(
    handles: impl IntoIterator<Item = ScopedJoinHandle<'scope, T>>,
    what: &str,
) -> anyhow::Result<Vec<T>> {
    let mut done = Vec::new();
    let mut panics = Vec::new();
    for handle in handles {
        match handle.join() {
            Ok(value) => done.push(value),
            Err(panic) => panics.push(panic_message(&*panic)),
        }
    }
    if !panics.is_empty() {
        bail!(
            "{} {what} thread(s) panicked: {}",
            panics.len(),
            panics.join("; ")
        );
    }
    Ok(done)
}

/// Awaits every task; if any panicked, an error with each panic's message (`what` names the
/// tasks, e.g. "request"). Tasks are never cancelled here, so a failure to join is a panic.
pub async fn join_tasks<T: 'static>(
    mut tasks: tokio::task::JoinSet<T>,
    what: &str,
) -> anyhow::Result<Vec<T>> {
    let mut done = Vec::new();
    let mut panics = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(value) => done.push(value),
            Err(error) if error.is_panic() => panics.push(panic_message(&*error.into_panic())),
            Err(error) => panics.push(error.to_string()),
        }
    }
    if !panics.is_empty() {
        bail!(
            "{} {what} task(s) panicked: {}",
            panics.len(),
            panics.join("; ")
        );
    }
    Ok(done)
}

/// Runs every future to its end on this task; if any panicked, an error with each panic's
/// message (`what` names them, e.g. "client").
pub async fn join_futures<T>(
    futures: impl IntoIterator<Item = impl Future<Output = T>>,
    what: &str,
) -> anyhow::Result<Vec<T>> {
    use futures_util::FutureExt as _;
    let caught = futures
        .into_iter()
        .map(|future| std::panic::AssertUnwindSafe(future).catch_unwind());
    let mut done = Vec::new();
    let mut panics = Vec::new();
    for joined in futures_util::future::join_all(caught).await {
        match joined {
            Ok(value) => done.push(value),
            Err(panic) => panics.push(panic_message(&*panic)),
        }
    }
    if !panics.is_empty() {
        bail!("{} {what}(s) panicked: {}", panics.len(), panics.join("; "));
    }
    Ok(done)
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicked_thread_is_an_error_with_its_message() {
        let result = std::thread::scope(|scope| {
            let handles = vec![
                scope.spawn(|| 1),
                scope.spawn(|| panic!("client 7 lost its container")),
            ];
            join_all(handles, "client")
        });
        let error = result.unwrap_err().to_string();
        assert!(
            error.contains("1 client thread(s) panicked: client 7 lost its container"),
            "{error}"
        );
        let fine = std::thread::scope(|scope| join_all([scope.spawn(|| 2)], "client"));
        assert_eq!(fine.unwrap(), vec![2]);
    }

    #[test]
    fn a_panicked_task_is_an_error_with_its_message() {
        let runtime = crate::runtime::build("loadgen").unwrap();
        let error = runtime.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            tasks.spawn(async { 1 });
            tasks.spawn(async { panic!("request 3 lost its container") });
            join_tasks(tasks, "request").await.unwrap_err().to_string()
        });
        assert!(
            error.contains("1 request task(s) panicked: request 3 lost its container"),
            "{error}"
        );
        let error = runtime.block_on(async {
            let clients = [1, 2, 3].map(|n| async move {
                assert!(n != 2, "client 2 lost its container");
                n
            });
            join_futures(clients, "client")
                .await
                .unwrap_err()
                .to_string()
        });
        assert!(
            error.contains("1 client(s) panicked: client 2 lost its container"),
            "{error}"
        );
    }
}

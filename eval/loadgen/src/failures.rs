//! Failures that must not vanish into the log: client threads that panicked, and containers
//! that could not be removed, paused or resumed (counted, so that a run can fail on them).

use std::{
    any::Any,
    sync::atomic::{AtomicUsize, Ordering},
    thread::ScopedJoinHandle,
};

use anyhow::bail;

static HOUSEKEEPING: AtomicUsize = AtomicUsize::new(0);

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
}

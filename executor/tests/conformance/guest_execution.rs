//! `--guest-execution async` (for the evaluation): guest jobs block the HTTP worker that handles
//! the request, behind the same admission control; the runtime contract and the limits hold.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::harness::{Executor, deadline_in};

#[test]
fn async_execution_runs_actions_traps_and_time_limits() {
    let ex = Executor::start_with(&["--guest-execution", "async"]);

    ex.init_action("echo", "echo");
    let params = json!({"greeting": "hello", "n": [1, 2, 3]});
    assert_eq!(ex.run("echo", params.clone()).expect(200).json(), params);

    ex.init_action("panic", "panic");
    let r = ex.run("panic", json!({"message": "boom"}));
    assert!(r.expect(502).error().contains("trapped"), "{}", r.text());
    assert_eq!(
        ex.run("panic", json!({"ok": true})).expect(200).json()["ok"],
        true
    );

    crate::limits::loop_ends_at_its_init_timeout(&ex);
    // The slot and the worker are free again.
    ex.run("loop", json!({})).expect(200);
    assert_eq!(ex.run("echo", json!({"x": 1})).expect(200).json()["x"], 1);
}

/// When `GET /health`, sent while a looping activation runs on the only HTTP worker thread,
/// is answered: well before the loop's deadline (`true`) or not (the margin covers the
/// deadline's rounding to epoch milliseconds).
fn health_answered_before_the_loops_deadline(mode: &str) -> bool {
    const DEADLINE: Duration = Duration::from_millis(3000);
    let ex = Arc::new(Executor::start_with_env(
        &["--guest-execution", mode],
        &[("TOKIO_WORKER_THREADS", "1")],
    ));
    ex.init_action("loop", "loop");
    let deadline = Instant::now() + DEADLINE;
    let looping = {
        let ex = Arc::clone(&ex);
        let deadline = deadline_in(DEADLINE.as_millis() as u64);
        std::thread::spawn(move || {
            let body = json!({"value": {"forever": true}, "deadline": deadline});
            ex.post("/loop/run", &body.to_string()).status
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    ex.get("/health").expect(200);
    let answered = Instant::now();
    assert_eq!(looping.join().unwrap(), 502, "{mode}: the loop times out");
    answered + Duration::from_millis(100) < deadline
}

#[test]
fn async_execution_blocks_the_http_worker_and_pool_does_not() {
    assert!(
        !health_answered_before_the_loops_deadline("async"),
        "async: /health waits for the guest on the only worker"
    );
    assert!(
        health_answered_before_the_loops_deadline("pool"),
        "pool: /health is answered while the guest runs"
    );
}

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

/// How long `GET /health` takes while a looping activation (deadline 1 s) runs, with one
/// HTTP worker thread.
fn health_during_a_loop(mode: &str) -> Duration {
    let ex = Arc::new(Executor::start_with_env(
        &["--guest-execution", mode],
        &[("TOKIO_WORKER_THREADS", "1")],
    ));
    ex.init_action("loop", "loop");
    let looping = {
        let ex = Arc::clone(&ex);
        std::thread::spawn(move || {
            let body = json!({"value": {"forever": true}, "deadline": deadline_in(1000)});
            ex.post("/loop/run", &body.to_string()).status
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    ex.get("/health").expect(200);
    let took = started.elapsed();
    assert_eq!(looping.join().unwrap(), 502);
    took
}

#[test]
fn async_execution_blocks_the_http_worker_and_pool_does_not() {
    let blocked = health_during_a_loop("async");
    assert!(
        blocked >= Duration::from_millis(500),
        "async: /health waits for the guest on the only worker ({blocked:?})"
    );
    let free = health_during_a_loop("pool");
    assert!(
        free < Duration::from_millis(500),
        "pool: /health is answered while the guest runs ({free:?})"
    );
}

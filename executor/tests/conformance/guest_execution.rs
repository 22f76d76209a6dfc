//! `--guest-execution`: where admitted guests run. `async` (wasmtime): on their request's task,
//! yielding as they compute and giving their slot back while they sleep; `blocking-worker` (for
//! the evaluation): guest jobs block the HTTP worker that handles the request, behind the same
//! admission control. The runtime contract and the limits hold in every mode.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::harness::{BUILD_RUNTIME, Executor, deadline_in};

/// Echo, a trap and a time limit, each followed by a run that shows the slot is free again.
fn runs_actions_traps_and_time_limits(ex: &Executor) {
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

    crate::limits::loop_ends_at_its_init_timeout(ex);
    // The slot and the worker are free again.
    ex.run("loop", json!({})).expect(200);
    assert_eq!(ex.run("echo", json!({"x": 1})).expect(200).json()["x"], 1);
}

#[test]
fn blocking_worker_execution_runs_actions_traps_and_time_limits() {
    runs_actions_traps_and_time_limits(&Executor::start_with(&[
        "--guest-execution",
        "blocking-worker",
    ]));
}

/// A guest that sleeps on a blocking thread is woken by the host I/O runtime, not by the HTTP
/// worker that its request blocks (with one worker, nothing else could wake it).
#[test]
fn blocking_worker_execution_wakes_a_sleeping_guest() {
    let ex = Executor::start_with_env(
        &["--guest-execution", "blocking-worker"],
        &[("TOKIO_WORKER_THREADS", "1")],
    );
    ex.init_code(
        "sleeper",
        &crate::harness::action("hostile"),
        json!({"limits": {"timeout": 5000}}),
    )
    .expect(200);
    assert_eq!(
        ex.run("sleeper", json!({"sleep_ms": 100}))
            .expect(200)
            .json(),
        json!({"slept_ms": 100})
    );
}

#[test]
fn pool_execution_runs_actions_traps_and_time_limits() {
    runs_actions_traps_and_time_limits(&Executor::start_with(&["--guest-execution", "pool"]));
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
fn blocking_worker_execution_blocks_the_http_worker_and_pool_does_not() {
    assert!(
        !health_answered_before_the_loops_deadline("blocking-worker"),
        "blocking-worker: /health waits for the guest on the only worker"
    );
    assert!(
        health_answered_before_the_loops_deadline("pool"),
        "pool: /health is answered while the guest runs"
    );
}

#[test]
fn async_execution_is_wasmtimes_default_and_refused_elsewhere() {
    let health = Executor::start().get("/health").expect(200).json();
    assert_eq!(health["runtime"], BUILD_RUNTIME, "{health}");
    if BUILD_RUNTIME == "wasmtime" {
        // A looping guest on the only HTTP worker yields to it at every epoch tick.
        assert!(
            health_answered_before_the_loops_deadline("async"),
            "async: /health is answered while the guest computes on the same worker"
        );
        runs_actions_traps_and_time_limits(&Executor::start_with(&["--guest-execution", "async"]));
    } else {
        let mut refused = Executor::spawn(&["--guest-execution", "async"]);
        let status = refused
            .exit_status(Duration::from_secs(10))
            .expect("the executor refuses to start");
        assert!(!status.success(), "{status}");
    }
}

/// Sleeping guests on their tasks hold no slot: sixteen 300 ms sleeps through two slots and no
/// queue all succeed, together, in about one sleep's time (on the pool they would be refused).
#[test]
fn async_sleepers_give_their_slots_back() {
    if BUILD_RUNTIME != "wasmtime" {
        return;
    }
    let ex = Arc::new(Executor::start_with(&[
        "--max-concurrent",
        "2",
        "--queue-depth",
        "0",
    ]));
    ex.init_action("sleeper", "hostile");
    // Warm, so that the timing below is the sleeps'.
    ex.run("sleeper", json!({"sleep_ms": 1})).expect(200);
    let started = Instant::now();
    let sleepers: Vec<_> = (0..16)
        .map(|_| {
            let ex = Arc::clone(&ex);
            std::thread::spawn(move || {
                let r = ex.run("sleeper", json!({"sleep_ms": 300}));
                (r.status, r.text())
            })
        })
        .collect();
    for sleeper in sleepers {
        let (status, text) = sleeper.join().unwrap();
        assert_eq!(status, 200, "{text}");
        assert_eq!(text, r#"{"slept_ms":300}"#);
    }
    let took = started.elapsed();
    // Two at a time on the pool would take eight sleeps (2.4 s).
    assert!(took < Duration::from_millis(1600), "{took:?}");
    let metrics = ex.get("/metrics").expect(200).text();
    assert!(metrics.contains("wasm_executor_task_guests 0"), "{metrics}");
}

/// Beyond `--max-instances`, a guest on its task is turned away with 503 at once, and the
/// others are served.
#[test]
fn async_guests_beyond_the_instances_are_refused() {
    if BUILD_RUNTIME != "wasmtime" {
        return;
    }
    let ex = Arc::new(Executor::start_with(&["--max-instances", "2"]));
    ex.init_action("sleeper", "hostile");
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            let ex = Arc::clone(&ex);
            std::thread::spawn(move || ex.run("sleeper", json!({"sleep_ms": 1500})).status)
        })
        .collect();
    let mut waited = Duration::ZERO;
    while !ex
        .get("/metrics")
        .text()
        .contains("wasm_executor_task_guests 2")
    {
        assert!(waited < Duration::from_secs(5), "the sleepers started");
        std::thread::sleep(Duration::from_millis(10));
        waited += Duration::from_millis(10);
    }
    let r = ex.run("sleeper", json!({"sleep_ms": 1}));
    assert!(r.expect(503).error().contains("capacity"), "{}", r.text());
    for sleeper in sleepers {
        assert_eq!(sleeper.join().unwrap(), 200);
    }
    ex.run("sleeper", json!({"sleep_ms": 1})).expect(200);
}

/// A client that goes away cancels its guest on its task: the instance is freed at once, not
/// at the guest's time limit, and the container serves the next activation.
#[test]
fn async_guest_of_a_client_that_goes_away_is_cancelled() {
    if BUILD_RUNTIME != "wasmtime" {
        return;
    }
    use std::io::Write;
    let ex = Executor::start();
    ex.init_action("sleeper", "hostile");
    let body = json!({"value": {"sleep_ms": 60_000}}).to_string();
    let mut client = std::net::TcpStream::connect(ex.addr).unwrap();
    write!(
        client,
        "POST /sleeper/run HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        ex.addr,
        body.len()
    )
    .unwrap();
    let guests = || {
        let metrics = ex.get("/metrics").expect(200).text();
        metrics
            .lines()
            .find_map(|l| l.strip_prefix("wasm_executor_task_guests "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap()
    };
    let started = Instant::now();
    while guests() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the guest started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(client);
    let left = Instant::now();
    while guests() != 0 {
        assert!(
            left.elapsed() < Duration::from_secs(5),
            "the guest of a client that went away is cancelled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        ex.run("sleeper", json!({"sleep_ms": 1})).expect(200).json(),
        json!({"slept_ms": 1})
    );
    ex.assert_healthy();
}

//! `--guest-execution`: where admitted guests run. `async` (wasmtime): on their request's task,
//! yielding as they compute; `pool`: on a pool thread. Either way a sleeping guest gives its
//! slot back. `blocking-worker` (for the evaluation): guest jobs block the HTTP worker that
//! handles the request, behind the same admission control. The runtime contract and the limits
//! hold in every mode.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::harness::{Executor, build_runtime, deadline_in, suspends_guests};

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

/// With `--guest-execution pool` a connection is served on a thread of its own while one is
/// free (`--connection-threads`), on the async workers beyond: either way a looping guest holds
/// up its own connection alone. One connection thread and one async worker, two loops: the
/// other connections are served while both loop.
#[test]
fn pool_guests_that_loop_hold_up_their_own_connections_alone() {
    const DEADLINE: Duration = Duration::from_millis(5000);
    let ex = Arc::new(Executor::start_with_env(
        &["--guest-execution", "pool", "--connection-threads", "1"],
        &[("TOKIO_WORKER_THREADS", "1")],
    ));
    ex.init_action("loop", "loop");
    ex.init_action("echo", "echo");
    let deadline = Instant::now() + DEADLINE;
    let loops: Vec<_> = (0..2)
        .map(|_| {
            let ex = Arc::clone(&ex);
            let deadline = deadline_in(DEADLINE.as_millis() as u64);
            std::thread::spawn(move || {
                let body = json!({"value": {"forever": true}, "deadline": deadline});
                ex.post("/loop/run", &body.to_string()).status
            })
        })
        .collect();
    ex.wait_until(Duration::from_secs(30), "both guests looping", |ex| {
        ex.gauge("pool_running") == 2
    });
    for i in 0..3 {
        assert_eq!(ex.run("echo", json!({"i": i})).expect(200).json()["i"], i);
    }
    assert_eq!(ex.gauge("connection_threads"), 1, "never more than allowed");
    let served = Instant::now();
    assert!(
        loops.iter().all(|l| !l.is_finished()),
        "the others were served while the guests looped"
    );
    for l in loops {
        assert_eq!(l.join().unwrap(), 502, "the loops time out");
    }
    assert!(served + Duration::from_millis(100) < deadline);
}

#[test]
fn async_execution_is_wasmtimes_default_and_refused_elsewhere() {
    let health = Executor::start().get("/health").expect(200).json();
    assert_eq!(health["runtime"], build_runtime(), "{health}");
    // Only wasmtime suspends guests on their task, and it does so by default.
    assert_eq!(
        health["suspends_guests"],
        build_runtime() == "wasmtime",
        "{health}"
    );
    let default = if suspends_guests() { "async" } else { "pool" };
    assert_eq!(health["guest_execution"], default, "{health}");
    if suspends_guests() {
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

/// Sleeping guests hold no slot: with two slots and no queue, three sleepers are asleep at once,
/// each seen holding no slot (`gauge` counts them alive) before the next one starts, and an
/// activation after them is still served (a sleeper that kept its slot would leave the third
/// refused with 503).
fn sleepers_give_their_slots_back(mode: &[&str], gauge: &str) {
    let mut flags = vec!["--max-concurrent", "2", "--queue-depth", "0"];
    flags.extend_from_slice(mode);
    let ex = Arc::new(Executor::start_with(&flags));
    ex.init_action("sleeper", "hostile");
    // Long enough that the first is still asleep when the third has started, even emulated.
    let sleep_ms = 10_000;
    let sleepers: Vec<_> = (1..=3)
        .map(|asleep| {
            let client = Arc::clone(&ex);
            let sleeper = std::thread::spawn(move || {
                let r = client.run("sleeper", json!({"sleep_ms": sleep_ms}));
                (r.status, r.text())
            });
            ex.wait_until(
                Duration::from_secs(60),
                &format!("sleeper {asleep} asleep without a slot"),
                |ex| ex.gauge(gauge) == asleep && ex.gauge("pool_running") == 0,
            );
            sleeper
        })
        .collect();
    assert_eq!(
        ex.run("sleeper", json!({"sleep_ms": 1})).expect(200).json(),
        json!({"slept_ms": 1})
    );
    for sleeper in sleepers {
        let (status, text) = sleeper.join().unwrap();
        assert_eq!(status, 200, "{text}");
        assert_eq!(text, format!(r#"{{"slept_ms":{sleep_ms}}}"#));
    }
    assert_eq!(ex.gauge(gauge), 0);
}

/// In the build's default mode: on their tasks in wasmtime's, on the pool in the others'.
#[test]
fn sleepers_give_their_slots_back_by_default() {
    let gauge = if suspends_guests() {
        "task_guests"
    } else {
        "pool_guests"
    };
    sleepers_give_their_slots_back(&[], gauge);
}

/// wasmtime's guests on the pool (those with a granted directory, or every guest with
/// `--guest-execution pool`) give their slots back too; the other builds run there by default.
#[test]
fn sleepers_on_the_pool_give_their_slots_back() {
    if suspends_guests() {
        sleepers_give_their_slots_back(&["--guest-execution", "pool"], "pool_guests");
    }
}

/// Beyond `--max-instances`, a guest on its task is turned away with 503 at once, and the
/// others are served.
#[test]
fn async_guests_beyond_the_instances_are_refused() {
    if !suspends_guests() {
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
    ex.wait_until(Duration::from_secs(30), "the sleepers started", |ex| {
        ex.gauge("task_guests") == 2
    });
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
    if !suspends_guests() {
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
    ex.wait_until(Duration::from_secs(30), "the guest started", |ex| {
        ex.gauge("task_guests") == 1
    });
    drop(client);
    // Well inside the guest's 60 s sleep (and its time limit).
    ex.wait_until(
        Duration::from_secs(30),
        "the guest of a client that went away is cancelled",
        |ex| ex.gauge("task_guests") == 0,
    );
    assert_eq!(
        ex.run("sleeper", json!({"sleep_ms": 1})).expect(200).json(),
        json!({"slept_ms": 1})
    );
    ex.assert_healthy();
}

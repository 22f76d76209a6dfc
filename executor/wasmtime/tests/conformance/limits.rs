//! Time and memory limits: a guest that loops or hogs memory ends as an error within its limit,
//! frees its worker, and everything else keeps being served.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Executor, action, deadline_in};

#[test]
fn an_infinite_loop_times_out_while_others_are_served() {
    const DEADLINE: Duration = Duration::from_millis(3000);
    let ex = std::sync::Arc::new(Executor::start());
    ex.init_action("loop", "loop");
    ex.init_action("add", "add");
    let looping = {
        let ex = std::sync::Arc::clone(&ex);
        std::thread::spawn(move || {
            let deadline = deadline_in(DEADLINE.as_millis() as u64);
            let body = json!({"value": {"forever": true}, "deadline": deadline});
            let started = Instant::now();
            let r = ex.post("/loop/run", &body.to_string());
            (r.status, r.error(), started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    // Meanwhile another container is served: five activations complete while the loop runs.
    for _ in 0..5 {
        assert_eq!(
            ex.run("add", json!({"param1": 1, "param2": 1}))
                .expect(200)
                .json(),
            json!({"result": 2})
        );
    }
    assert!(
        !looping.is_finished(),
        "the other container was served while the loop ran, not after it"
    );
    let (status, error, took) = looping.join().unwrap();
    assert_eq!(status, 502);
    // OpenWhisk's text, with what remained of the deadline when the request arrived.
    let limit_ms: u128 = error
        .strip_prefix("The action exceeded its time limits of ")
        .and_then(|rest| rest.strip_suffix(" milliseconds."))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("not OpenWhisk's time-limit error: {error}"));
    assert!(
        limit_ms <= DEADLINE.as_millis() && limit_ms + 500 >= DEADLINE.as_millis(),
        "{error}"
    );
    ex.assert_stopped_on_time(took, DEADLINE, "a looping guest with a deadline");
    // The worker is free again: the same container runs normally.
    ex.run("loop", json!({})).expect(200);
}

#[test]
fn the_init_timeout_applies_without_a_deadline() {
    loop_ends_at_its_init_timeout(&Executor::start());
}

/// A looping guest created with a 300 ms timeout and run without a deadline ends with the
/// time-limit error at its timeout.
pub(crate) fn loop_ends_at_its_init_timeout(ex: &Executor) {
    ex.init_code("loop", &action("loop"), json!({"limits": {"timeout": 300}}))
        .expect(200);
    let started = Instant::now();
    let r = ex.run("loop", json!({"forever": true}));
    let took = started.elapsed();
    assert_eq!(
        r.expect(502).error(),
        "The action exceeded its time limits of 300 milliseconds."
    );
    ex.assert_stopped_on_time(took, Duration::from_millis(300), "the init timeout");
}

#[test]
fn a_memory_hog_is_stopped_at_the_container_limit() {
    let ex = Executor::start();
    ex.init_code("hog", &action("memhog"), json!({"limits": {"memory": 64}}))
        .expect(200);
    let r = ex.run("hog", json!({"mb": 128}));
    assert_eq!(
        r.expect(502).error(),
        "The action exhausted its memory and was aborted."
    );
    ex.run("hog", json!({"mb": 16})).expect(200);
    // The executor default (256 MB) applies without limits.
    ex.init_action("hog2", "memhog");
    ex.run("hog2", json!({"mb": 128})).expect(200);
    ex.run("hog2", json!({"mb": 400})).expect(502);
}

#[test]
fn a_memory_limit_beyond_the_maximum_is_refused_at_init() {
    let ex = Executor::start_with(&["--max-memory-mb", "512"]);
    let r = ex.init_code("big", &action("add"), json!({"limits": {"memory": 4096}}));
    assert!(r.expect(502).error().contains("4096 MB"));
}

#[test]
fn a_full_pool_answers_503_so_openwhisk_reschedules() {
    let ex = std::sync::Arc::new(Executor::start_with(&[
        "--pool-threads",
        "1",
        "--max-concurrent",
        "1",
        "--queue-depth",
        "0",
    ]));
    ex.init_action("loop", "loop");
    let busy = {
        let ex = std::sync::Arc::clone(&ex);
        std::thread::spawn(move || {
            let body = json!({"value": {"forever": true}, "deadline": deadline_in(1000)});
            ex.post("/loop/run", &body.to_string()).status
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let r = ex.run("loop", json!({}));
    assert!(r.expect(503).error().contains("capacity"), "{}", r.text());
    // It passes as activations end: worth asking again soon.
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(busy.join().unwrap(), 502);
    ex.run("loop", json!({})).expect(200);
    let metrics = ex.get("/metrics").text();
    assert!(
        metrics.contains("wasm_executor_rejected_total 1"),
        "{metrics}"
    );
}

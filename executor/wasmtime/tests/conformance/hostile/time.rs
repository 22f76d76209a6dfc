//! Time limits against guests that wait instead of computing: sleeping in WASI, or blocked in
//! a host call. Their activations end at the limit and give their slot back, so a crowd of
//! sleepers cannot hold every slot.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::harness::{Executor, action};

#[test]
fn a_guest_sleeping_in_wasi_ends_at_its_time_limit() {
    let ex = Executor::start();
    ex.init_code(
        "sleeper",
        &action("hostile"),
        json!({"limits": {"timeout": 1000}}),
    )
    .expect(200);
    let started = Instant::now();
    let r = ex.run("sleeper", json!({"sleep_ms": 60_000}));
    let took = started.elapsed();
    assert_eq!(
        r.expect(502).error(),
        "The action exceeded its time limits of 1000 milliseconds."
    );
    ex.assert_stopped_on_time(took, Duration::from_millis(1000), "a sleeping guest");
    // A short sleep is a sleep.
    let started = Instant::now();
    assert_eq!(
        ex.run("sleeper", json!({"sleep_ms": 200}))
            .expect(200)
            .json(),
        json!({"slept_ms": 200})
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[test]
fn sleepers_cannot_hold_every_slot() {
    // Two slots, no queue: twice as many sleepers as slots, each asking for a minute.
    let ex = Arc::new(Executor::start_with(&[
        "--pool-threads",
        "2",
        "--max-concurrent",
        "2",
        "--queue-depth",
        "0",
    ]));
    ex.init_code(
        "sleeper",
        &action("hostile"),
        json!({"limits": {"timeout": 800}}),
    )
    .expect(200);
    ex.init_action("echo", "echo");
    let sleepers: Vec<_> = (0..4)
        .map(|_| {
            let ex = Arc::clone(&ex);
            std::thread::spawn(move || ex.run("sleeper", json!({"sleep_ms": 60_000})).status)
        })
        .collect();
    let statuses: Vec<u16> = sleepers.into_iter().map(|s| s.join().unwrap()).collect();
    // Those admitted ended at their limit (502); the others were turned away (503).
    assert!(
        statuses.iter().all(|s| [502, 503].contains(s)),
        "{statuses:?}"
    );
    assert!(statuses.contains(&502), "{statuses:?}");
    // Every slot is free again.
    for _ in 0..4 {
        assert_eq!(
            ex.run("echo", json!({"n": 1})).expect(200).json(),
            json!({"n": 1})
        );
    }
}

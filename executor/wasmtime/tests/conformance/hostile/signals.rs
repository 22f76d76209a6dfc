//! Signals from other programs: the runtimes use SIGUSR1 and SIGUSR2 internally (wasmer's
//! interrupt, WAMR's wake-up of blocked calls, the host-call unblocker); one sent from outside,
//! even while guests run, must not end or disturb the executor.

use std::{sync::Arc, time::Duration};

use serde_json::json;

use crate::harness::{Executor, deadline_in};

#[test]
fn stray_usr1_and_usr2_change_nothing() {
    let ex = Arc::new(Executor::start());
    ex.init_action("loop", "loop");
    ex.init_action("echo", "echo");
    let looping = {
        let ex = Arc::clone(&ex);
        std::thread::spawn(move || {
            let body = json!({"value": {"forever": true}, "deadline": deadline_in(2000)});
            ex.post("/loop/run", &body.to_string()).status
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    for round in 0..5 {
        for signal in ["-USR1", "-USR2"] {
            let status = std::process::Command::new("kill")
                .args([signal, &ex.pid().to_string()])
                .status()
                .expect("kill");
            assert!(status.success());
        }
        assert_eq!(
            ex.run("echo", json!({"round": round})).expect(200).json(),
            json!({"round": round})
        );
    }
    assert_eq!(
        looping.join().unwrap(),
        502,
        "the loop still ends at its deadline"
    );
    ex.assert_healthy();
}

//! Hostile requests: absurd limits and deadlines, hostile ids, crowded zips, more containers
//! and more body bytes than the operator allows, slow preparations, and /init racing /destroy.
//! Each gets a clear answer and leaves nothing behind.

use std::{
    io::Write,
    net::TcpStream,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;

use crate::harness::{Executor, action, post_expecting_continue, zip_of};

#[test]
fn absurd_limits_are_refused_at_init() {
    let ex = Executor::start();
    for (limits, what) in [
        (json!({"memory": u64::MAX}), "memory"),
        (json!({"memory": 0}), "memory"),
        (json!({"timeout": u64::MAX}), "time"),
        (json!({"timeout": 0}), "time"),
        (json!({"logs": u64::MAX}), "log"),
    ] {
        let r = ex.init_code("absurd", &action("echo"), json!({ "limits": limits }));
        let error = r.expect(502).error();
        assert!(
            error.starts_with(&format!("the {what} limit of "))
                && error.contains("is outside what this executor allows"),
            "{limits}: {error}"
        );
    }
    for limits in [
        json!({"memory": -1}),
        json!({"timeout": 1.5}),
        json!({"logs": "10"}),
    ] {
        let r = ex.init_code("absurd", &action("echo"), json!({ "limits": limits }));
        assert!(
            r.expect(400).error().contains("invalid JSON body"),
            "{limits}: {}",
            r.text()
        );
    }
    assert_eq!(ex.get("/containers").json(), json!({"containers": []}));
    ex.assert_healthy();
}

#[test]
fn a_deadline_far_in_the_future_is_held_to_the_operators_maximum() {
    let ex = Executor::start_with(&["--max-timeout-ms", "700", "--default-timeout-ms", "700"]);
    ex.init_action("loop", "loop");
    for deadline in [
        json!("18446744073709551615"),
        json!(u64::MAX),
        json!("99999999999999"),
    ] {
        let started = Instant::now();
        let body = json!({"value": {"forever": true}, "deadline": deadline});
        let r = ex.post("/loop/run", &body.to_string());
        let took = started.elapsed();
        assert_eq!(
            r.expect(502).error(),
            "The action exceeded its time limits of 700 milliseconds.",
            "{deadline}"
        );
        ex.assert_stopped_on_time(took, Duration::from_millis(700), "a far deadline");
    }
    ex.assert_healthy();
}

#[test]
fn defaults_beyond_their_maximum_stop_the_executor_at_start() {
    let mut ex = Executor::spawn(&["--max-timeout-ms", "700"]);
    let status = ex
        .exit_status(Duration::from_secs(20))
        .expect("refused at start");
    assert!(!status.success());
}

#[test]
fn hostile_ids_are_refused_without_effect() {
    let ex = Executor::start();
    let body = json!({"value": {"code": "AAAA"}}).to_string();
    for id in [
        "",
        ".",
        "..",
        "%2e%2e",
        "a%2fb",
        "%00",
        "%ff",
        "caf%C3%A9",
        &"x".repeat(129),
    ] {
        let r = ex.post(&format!("/{id}/init"), &body);
        assert_eq!(
            r.expect(400).error(),
            "container ids are 1 to 128 characters of A-Z a-z 0-9 . _ - (not . or ..)",
            "{id}"
        );
    }
    for path in ["/a/b/init", "/init"] {
        assert!([404, 405].contains(&ex.post(path, &body).status), "{path}");
    }
    assert_eq!(ex.get("/containers").json(), json!({"containers": []}));
    ex.assert_healthy();
}

#[test]
fn environment_entries_no_guest_could_read_are_refused_alike_on_every_backend() {
    let ex = Executor::start();
    for (name, value) in [("A\u{0}B", "x"), ("A=B", "x"), ("", "x"), ("A", "x\u{0}y")] {
        let r = ex.init_code("env", &action("env"), json!({"env": {name: value}}));
        let error = r.expect(502).error();
        assert!(
            error.contains("cannot be passed to the action"),
            "{name:?}={value:?}: {error}"
        );
    }
    ex.init_action("env", "env");
    let body = json!({"value": {}, "odd\u{0}field": "x", "namespace": "a\u{0}b"}).to_string();
    let error = ex.post("/env/run", &body).expect(400).error();
    assert!(error.contains("cannot be passed to the action"), "{error}");
    // A NUL inside the parameters is data, not an environment variable: it reaches the action.
    let out = ex.run("env", json!({"text": "a\u{0}b"})).expect(200).json();
    assert!(out.is_object(), "{out}");
    ex.assert_healthy();
}

#[test]
fn a_crowded_zip_gets_a_short_answer() {
    let ex = Executor::start();
    let names: Vec<String> = (0..50_000).map(|i| format!("entry-{i:05}.txt")).collect();
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b""[..])).collect();
    let r = ex.init_code("crowded", &zip_of(&entries), json!({}));
    let error = r.expect(502).error();
    assert!(error.contains("50000 entries"), "{error}");
    assert!(
        r.body.len() < 1024,
        "a short answer, not {} bytes",
        r.body.len()
    );
    ex.assert_healthy();
}

#[test]
fn containers_beyond_the_maximum_are_turned_away() {
    let ex = Executor::start_with(&["--max-containers", "3"]);
    for id in ["c1", "c2", "c3"] {
        ex.init_action(id, "echo");
    }
    let r = ex.init_code("c4", &action("echo"), json!({}));
    assert_eq!(
        r.expect(503).error(),
        "the executor holds its maximum of 3 containers; retry elsewhere"
    );
    // Only destroying a container makes room: no `Retry-After`, a client need not ask again soon.
    assert_eq!(r.header("retry-after"), None);
    ex.post("/c1/destroy", "").expect(200);
    ex.init_action("c4", "echo");
    assert_eq!(
        ex.run("c4", json!({"k": 4})).expect(200).json(),
        json!({"k": 4})
    );
}

#[test]
fn request_bodies_beyond_the_shared_budget_wait_for_nothing() {
    let ex = Executor::start_with(&["--max-body-mb", "1", "--max-pending-body-mb", "1"]);
    ex.init_action("echo", "echo");
    // A client that announces 900 KB and sends them slowly holds most of the budget...
    let mut slow = TcpStream::connect(ex.addr).unwrap();
    let head = format!(
        "POST /echo/run HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 900000\r\n\r\n{{\"value\":",
        ex.addr
    );
    slow.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // ...so another 900 KB is turned away at once, before its body is read,
    let big = format!("{{\"value\":{{\"pad\":\"{}\"}}}}", "p".repeat(899_950));
    let r = post_expecting_continue(&ex, "/echo/run", big.as_bytes());
    assert_eq!(
        r.expect(503).error(),
        "the executor holds as many request bodies as it may; retry elsewhere"
    );
    assert_eq!(r.header("retry-after"), Some("1"));
    // while small requests still fit.
    assert_eq!(
        ex.run("echo", json!({"small": true})).expect(200).json(),
        json!({"small": true})
    );
    drop(slow);
    std::thread::sleep(Duration::from_millis(300));
    let r = post_expecting_continue(&ex, "/echo/run", big.as_bytes());
    assert_eq!(r.expect(200).json()["pad"].as_str().unwrap().len(), 899_950);
}

#[test]
fn a_preparation_past_the_init_limit_fails_and_frees_the_id() {
    let ex = Executor::start_with(&["--max-init-ms", "1"]);
    let r = ex.init_code("slow", &action("big"), json!({}));
    assert_eq!(
        r.expect(502).error(),
        "preparing the module took longer than this executor allows (1 ms)"
    );
    assert_eq!(ex.get("/containers").json(), json!({"containers": []}));
    ex.assert_healthy();
}

#[test]
fn init_racing_destroy_leaves_no_container_behind() {
    let ex = Arc::new(Executor::start());
    for round in 0..20 {
        let id = format!("race{round}");
        let init = {
            let ex = Arc::clone(&ex);
            let id = id.clone();
            // `big` takes a moment to prepare: the destroy lands while it does.
            std::thread::spawn(move || ex.init_code(&id, &action("big"), json!({})).status)
        };
        std::thread::sleep(Duration::from_millis(round % 5 * 3));
        let destroyed = ex.post(&format!("/{id}/destroy"), "").status;
        let init = init.join().unwrap();
        match (destroyed, init) {
            // Destroyed before the /init arrived: the /init made the container; remove it.
            (404, 200) => {
                ex.post(&format!("/{id}/destroy"), "").expect(200);
            }
            // Destroyed while initializing (the /init then says so), or after: gone.
            (200, 404 | 200) => {}
            other => panic!("round {round}: destroy and init answered {other:?}"),
        }
        ex.run(&id, json!({})).expect(404);
    }
    assert_eq!(ex.get("/containers").json(), json!({"containers": []}));
    ex.assert_healthy();
}

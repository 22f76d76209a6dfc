//! Health, metrics and the HTTP framing OpenWhisk's invoker depends on.

use serde_json::json;

use crate::harness::{Executor, action, build_runtime};

#[test]
fn health_names_the_runtime() {
    let ex = Executor::start();
    let health = ex.get("/health").expect(200).json();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["runtime"], build_runtime(), "{health}");
    // The version Cargo.lock pins for this runtime (WAMR: the version of its pinned sources).
    let locked = wasm_artifact::RuntimeId::from_name(build_runtime())
        .unwrap()
        .locked_version();
    assert_eq!(health["runtime_version"], locked, "{health}");
    assert_eq!(
        health["target"],
        crate::harness::executor_target(),
        "{health}"
    );
}

#[test]
fn every_answer_names_the_executor_instance_and_a_restart_changes_it() {
    let first = Executor::start();
    let instance = first.get("/health").expect(200).json()["instance"]
        .as_str()
        .expect("/health names the instance")
        .to_owned();
    assert!(
        instance.len() == 32 && instance.bytes().all(|b| b.is_ascii_hexdigit()),
        "{instance}"
    );
    for answer in [
        first.get("/health"),
        first.run("ghost", json!({})),
        first.post("/x/init", "{"),
        first.get("/metrics"),
    ] {
        assert_eq!(
            answer.header("wasm-executor-instance"),
            Some(instance.as_str()),
            "status {}",
            answer.status
        );
    }
    let second = Executor::start();
    let other = second.get("/health").json()["instance"].clone();
    assert_ne!(other, json!(instance), "two processes, one instance id");
}

#[test]
fn refusals_at_capacity_count_as_rejected_not_as_failed_inits() {
    let ex = Executor::start_with(&["--max-containers", "1"]);
    ex.init_action("a", "add");
    let r = ex.init_code("b", &action("add"), json!({}));
    assert!(r.expect(503).error().contains("maximum"), "{}", r.text());
    let text = ex.get("/metrics").expect(200).text();
    assert!(text.contains("wasm_executor_rejected_total 1"), "{text}");
    assert!(
        text.contains(r#"wasm_executor_inits_total{outcome="ok"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"wasm_executor_inits_total{outcome="error"} 0"#),
        "{text}"
    );
}

#[test]
fn metrics_count_activations_by_outcome() {
    let ex = Executor::start();
    ex.init_action("add", "add");
    ex.init_action("panic", "panic");
    ex.run("add", json!({"param1": 1, "param2": 2})).expect(200);
    ex.run("add", json!({"param1": "x"})).expect(200);
    ex.run("panic", json!({"message": "m"})).expect(502);
    let text = ex.get("/metrics").expect(200).text();
    for expected in [
        r#"wasm_executor_activations_total{outcome="success"} 1"#,
        r#"wasm_executor_activations_total{outcome="application_error"} 1"#,
        r#"wasm_executor_activations_total{outcome="trapped"} 1"#,
        r#"wasm_executor_inits_total{outcome="ok"} 2"#,
        "wasm_executor_containers 2",
        "wasm_executor_run_duration_seconds_count 3",
        "wasm_executor_pool_running",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
}

#[test]
fn every_answer_has_content_length_on_fresh_connections() {
    // The harness opens a new connection per request and checks Content-Length on every
    // answer; here the answers of every kind pass through it once.
    let ex = Executor::start();
    ex.init_action("e", "echo");
    ex.run("e", json!({"a": 1})).expect(200);
    ex.run("nope", json!({})).expect(404);
    ex.post("/e/init", "{").expect(400);
    ex.get("/e/logs").expect(200);
    ex.get("/metrics").expect(200);
    ex.post("/e/destroy", "").expect(200);
}

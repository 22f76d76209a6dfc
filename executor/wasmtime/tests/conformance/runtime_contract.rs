//! OpenWhisk's action-runtime contract: init once, run many, results, logs, context, errors.

use serde_json::{Value, json};

use crate::harness::{Executor, action, deadline_in, printing_module, zip_of};

#[test]
fn add_through_a_zip_like_wsk_uploads_it() {
    let ex = Executor::start();
    let zip = zip_of(&[("add.wasm", &action("add"))]);
    ex.init_code("add", &zip, json!({})).expect(200);
    let r = ex.run("add", json!({"param1": 2, "param2": 2}));
    assert_eq!(r.expect(200).json(), json!({"result": 4}));
}

#[test]
fn echo_round_trips_strings_unicode_numbers_and_objects() {
    let ex = Executor::start();
    ex.init_action("echo", "echo");
    for params in [
        json!({}),
        json!({"s": "hello"}),
        json!({"u": "Ελληνικά ☃ 漢字 🎉", "esc": "line\nbreak \"quoted\" \\ tab\t"}),
        json!({"i": 42, "neg": -7, "f": 3.25, "big": 1e300, "t": true, "n": null}),
        json!({"nested": {"list": [1, "two", {"three": [3]}], "empty": {}}}),
    ] {
        assert_eq!(ex.run("echo", params.clone()).expect(200).json(), params);
    }
}

#[test]
fn a_one_mebibyte_parameter_arrives_whole() {
    let ex = Executor::start();
    ex.init_action("echo", "echo");
    let big = "x".repeat(1 << 20);
    let r = ex.run("echo", json!({"big": big}));
    assert_eq!(r.expect(200).json()["big"].as_str().unwrap().len(), 1 << 20);
}

#[test]
fn stdout_and_stderr_are_logs_framed_by_sentinels() {
    let ex = Executor::start();
    ex.init_action("echo", "echo");
    ex.run(
        "echo",
        json!({"__log": ["out one", "out two"], "__err": ["err one"]}),
    )
    .expect(200);
    ex.run("echo", json!({"__log": ["second activation"]}))
        .expect(200);
    let logs = ex.logs("echo");
    let texts: Vec<(String, String)> = logs
        .iter()
        .map(|l| {
            (
                l["stream"].as_str().unwrap().to_owned(),
                l["log"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let sentinel = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX\n";
    let expected: Vec<(String, String)> = [
        ("stdout", "out one\n"),
        ("stdout", "out two\n"),
        ("stderr", "err one\n"),
        ("stdout", sentinel),
        ("stderr", sentinel),
        ("stdout", "second activation\n"),
        ("stdout", sentinel),
        ("stderr", sentinel),
    ]
    .iter()
    .map(|(s, t)| (s.to_string(), t.to_string()))
    .collect();
    assert_eq!(texts, expected);
    for line in &logs {
        let time = line["time"].as_str().unwrap();
        assert!(
            time.ends_with('Z') && time.contains('T'),
            "RFC 3339 time: {time}"
        );
    }
    assert!(ex.logs("echo").is_empty(), "collected logs are gone");
}

#[test]
fn activation_context_and_init_env_reach_the_guest() {
    let ex = Executor::start_with(&["--api-host", "https://openwhisk.example:443"]);
    let r = ex.init_code(
        "env",
        &action("env"),
        json!({"env": {"GREETING": "hi", "__OW_ACTION_NAME": "/guest/old"}}),
    );
    r.expect(200);
    let deadline = deadline_in(60_000);
    let body = json!({
        "value": {"p": 1},
        "namespace": "guest", "action_name": "/guest/env", "action_version": "0.0.2",
        "activation_id": "a-1", "transaction_id": "t-1", "deadline": deadline, "api_key": "uuid:key",
    });
    let out = ex.post("/env/run", &body.to_string()).expect(200).json();
    let ctx = &out["context"];
    assert_eq!(ctx["__OW_NAMESPACE"], "guest");
    assert_eq!(
        ctx["__OW_ACTION_NAME"], "/guest/env",
        "the run's context overrides the init env"
    );
    assert_eq!(ctx["__OW_ACTION_VERSION"], "0.0.2");
    assert_eq!(ctx["__OW_ACTIVATION_ID"], "a-1");
    assert_eq!(ctx["__OW_TRANSACTION_ID"], "t-1");
    assert_eq!(ctx["__OW_DEADLINE"], Value::String(deadline));
    assert_eq!(ctx["__OW_API_KEY"], "uuid:key");
    assert_eq!(ctx["__OW_API_HOST"], "https://openwhisk.example:443");
    assert_eq!(out["env"]["GREETING"], "hi");
    assert_eq!(out["argv_count"], 2);
    assert_eq!(out["stdin_matches_argv"], true);
}

#[test]
fn init_is_accepted_once() {
    let ex = Executor::start();
    ex.init_action("a", "add");
    let again = ex.init_code("a", &action("add"), json!({}));
    assert_eq!(
        again.expect(403).error(),
        "Cannot initialize the action more than once."
    );
    // The first init still serves.
    ex.run("a", json!({"param1": 1, "param2": 1})).expect(200);
}

#[test]
fn empty_init_is_refused() {
    let ex = Executor::start();
    for body in [
        r#"{}"#,
        r#"{"value": {}}"#,
        r#"{"value": {"main": "main", "code": ""}}"#,
    ] {
        let r = ex.post("/empty/init", body);
        assert_eq!(
            r.expect(403).error(),
            "Missing main/no code to execute.",
            "{body}"
        );
    }
    // A refused init leaves the id free.
    ex.init_action("empty", "add");
}

#[test]
fn a_result_that_is_not_a_dictionary_is_a_developer_error() {
    let ex = Executor::start();
    for (id, printed) in [("number", "42"), ("text", "hello"), ("nothing", "")] {
        ex.init_code(id, &printing_module(printed, ""), json!({}))
            .expect(200);
        let r = ex.run(id, json!({}));
        assert_eq!(
            r.expect(502).error(),
            "The action did not return a dictionary.",
            "{id}"
        );
    }
    // What was printed is not lost: it is in the logs.
    let logs = ex.logs("text");
    assert!(logs.iter().any(|l| l["log"] == "hello\n"), "{logs:?}");
}

#[test]
fn an_array_result_is_passed_through() {
    // OpenWhisk accepts a JSON array as an action's result, as well as an object.
    let ex = Executor::start();
    ex.init_code(
        "list",
        &printing_module(r#"[1,"two",{"three":3}]"#, ""),
        json!({}),
    )
    .expect(200);
    assert_eq!(
        ex.run("list", json!({})).expect(200).json(),
        json!([1, "two", {"three": 3}])
    );
}

#[test]
fn an_application_error_is_a_result() {
    let ex = Executor::start();
    ex.init_action("add", "add");
    let r = ex.run("add", json!({"param1": "two", "param2": 2}));
    // The action's own message, passed through as its result (OpenWhisk shows it to the user).
    assert_eq!(
        r.expect(200).json(),
        json!({"error": "parameter 'param1' must be a number, got \"two\""})
    );
    let r = ex.run("add", json!({"param2": 2}));
    assert_eq!(
        r.expect(200).json(),
        json!({"error": "missing parameter 'param1'"})
    );
}

#[test]
fn main_selects_a_non_default_entry_point() {
    let ex = Executor::start();
    let module = printing_module(
        r#"{"entry":"start"}"#,
        r#"(func (export "second") (call $print (i32.const 2048) (i32.const 19)))
           (data (i32.const 2048) "{\"entry\":\"second\"}\n")"#,
    );
    ex.init_code("default", &module, json!({})).expect(200);
    assert_eq!(
        ex.run("default", json!({})).expect(200).json(),
        json!({"entry": "start"})
    );
    ex.init_code("second", &module, json!({"main": "second"}))
        .expect(200);
    assert_eq!(
        ex.run("second", json!({})).expect(200).json(),
        json!({"entry": "second"})
    );
    let missing = ex.init_code("missing", &module, json!({"main": "nope"}));
    assert!(missing.expect(502).error().contains("nope"));
    // The SDK's second export of `add`.
    ex.init_code("multiply", &action("add"), json!({"main": "multiply"}))
        .expect(200);
    assert_eq!(
        ex.run("multiply", json!({"param1": 3, "param2": 4}))
            .expect(200)
            .json(),
        json!({"result": 12})
    );
}

#[test]
fn an_action_in_c_runs() {
    let ex = Executor::start();
    ex.init_action("wc", "wordcount");
    let r = ex.run("wc", json!({"text": "the quick brown fox"}));
    assert_eq!(r.expect(200).json()["words"], 4);
}

//! Actions in JavaScript (`kind: nodejs:*`) on the executor's engine: OpenWhisk's nodejs action
//! contract as its own runtime's tests check it (results, errors, promises, logs, environment,
//! zipped packages), each action evaluated once into a snapshot that every activation starts
//! from, and refusals at /init that name what cannot run.

use std::time::Instant;

use serde_json::{Value, json};

use crate::harness::{
    Executor, ScratchDir, b64, js_engine, precompile_snapshot, precompiled_snapshot,
    writes_stay_in_their_instance, zip_of,
};

/// A nodejs action's /init value for `source` (text, as `wsk action create x.js` sends it).
fn js(source: &str) -> Value {
    json!({ "kind": "nodejs:20", "code": source, "binary": false, "main": "main" })
}

fn js_zip(entries: &[(&str, &[u8])]) -> Value {
    json!({ "kind": "nodejs:20", "code": b64(&zip_of(entries)), "binary": true, "main": "main" })
}

/// An executor for JavaScript actions (`None`: this build runs precompiled artifacts only).
fn js_executor(extra: &[&str]) -> Option<Executor> {
    let probe = js("function main() { return {}; }");
    Executor::with_engine("--js-engine", &js_engine(), extra, probe, "JavaScript")
}

#[test]
fn javascript_results_errors_and_packages_follow_openwhisk_nodejs_contract() {
    let Some(ex) = js_executor(&[]) else { return };
    let cases: &[(&str, &str, u16, Value)] = &[
        (
            "object",
            "function main(p) { return { got: p.x } }",
            200,
            json!({"got": 1}),
        ),
        ("no_return", "function main() { return; }", 200, json!({})),
        (
            "array",
            "function main() { return ['a', 'b'] }",
            200,
            json!(["a", "b"]),
        ),
        (
            "app_error",
            "function main() { return { error: 'sorry' } }",
            200,
            json!({"error": "sorry"}),
        ),
        (
            "exports",
            "exports.main = (p) => ({ via: 'exports', x: p.x })",
            200,
            json!({"via": "exports", "x": 1}),
        ),
        (
            "module_exports",
            "module.exports.main = () => ({ via: 'module' })",
            200,
            json!({"via": "module"}),
        ),
        (
            "promise",
            "function main(p) { return Promise.resolve({ x: p.x + 1 }) }",
            200,
            json!({"x": 2}),
        ),
        (
            "async",
            "async function main(p) { await null; return { x: p.x } }",
            200,
            json!({"x": 1}),
        ),
        (
            "timer",
            "function main() { return new Promise(r => setTimeout(() => r({ waited: true }), 20)) }",
            200,
            json!({"waited": true}),
        ),
        (
            "rejected",
            "function main() { return Promise.reject({ done: true }) }",
            200,
            json!({"error": {"done": true}}),
        ),
        (
            "rejected_empty",
            "function main() { return new Promise((_, no) => no()) }",
            200,
            json!({"error": {}}),
        ),
        (
            "thrown",
            "function main() { throw new Error('x') }",
            502,
            json!({"error": "An error has occurred: Error: x"}),
        ),
        (
            "thrown_string",
            "function main() { throw 'nooooo' }",
            502,
            json!({"error": "An error has occurred: nooooo"}),
        ),
        (
            "string",
            "function main() { return 'hi' }",
            502,
            json!({"error": "The action did not return a dictionary."}),
        ),
        (
            "never",
            "function main() { return new Promise(() => {}) }",
            502,
            Value::Null,
        ),
    ];
    for (id, source, _, _) in cases {
        ex.init(id, js(source)).expect(200);
    }
    for (id, _, status, expected) in cases {
        let r = ex.run(id, json!({"x": 1}));
        assert_eq!(r.status, *status, "{id}: {}", r.text());
        if !expected.is_null() {
            assert_eq!(r.json(), *expected, "{id}");
        }
    }
    // Errors thrown in async code carry V8's `Name: message` first line, as OpenWhisk's tests
    // look for it.
    for (id, source, text) in [
        (
            "reference",
            "async function main() { return a.b.c }",
            "referenceerror: a is not defined",
        ),
        (
            "app_throw",
            "async function main() { throw new Error('app error') }",
            "error: app error",
        ),
    ] {
        ex.init(id, js(source)).expect(200);
        let r = ex.run(id, json!({}));
        r.expect(200);
        let error = r.json()["error"].to_string().to_lowercase();
        assert!(error.contains(text), "{id}: {error}");
    }
    let r = ex.run("never", json!({}));
    assert!(r.error().contains("never settles"), "{}", r.error());
    zipped_packages_resolve_their_own_files_and_bundled_dependencies(&ex);
}

/// Zipped npm packages: package.json's `main` or index.js, their own files and JSON, bundled
/// dependencies in node_modules; a missing file fails when it is required, as in Node.
fn zipped_packages_resolve_their_own_files_and_bundled_dependencies(ex: &Executor) {
    ex.init(
        "pkg",
        js_zip(&[
            ("package.json", br#"{"main": "lib/app.js"}"#),
            ("lib/app.js", b"const h = require('./helper'); const pad = require('leftpad'); const data = require('../data.json');\nexports.main = (p) => ({ msg: h.greet(p.name), padded: pad('x', 3), n: data.n })"),
            ("lib/helper.js", b"exports.greet = (n) => 'hi ' + n"),
            ("data.json", br#"{"n": 7}"#),
            ("node_modules/leftpad/package.json", br#"{"main": "index"}"#),
            ("node_modules/leftpad/index.js", b"module.exports = (s, n) => ' '.repeat(n - s.length) + s"),
        ]),
    )
    .expect(200);
    let out = ex.run("pkg", json!({"name": "zed"})).expect(200).json();
    assert_eq!(out, json!({"msg": "hi zed", "padded": "  x", "n": 7}));

    ex.init(
        "index",
        js_zip(&[("index.js", b"exports.main = () => ({ from: 'index.js' })")]),
    )
    .expect(200);
    assert_eq!(
        ex.run("index", json!({})).expect(200).json(),
        json!({"from": "index.js"})
    );

    ex.init(
        "missing_dep",
        js("function main() { require('./.mildly_missing'); return {} }"),
    )
    .expect(200);
    let r = ex.run("missing_dep", json!({}));
    assert_eq!(r.status, 502);
    assert!(r.error().contains("Cannot find module"), "{}", r.error());
}

#[test]
fn every_activation_starts_from_the_snapshot_with_its_own_environment_and_logs() {
    let Some(ex) = js_executor(&[]) else { return };
    let source = r#"
        let runs = 0;
        const table = Array.from({ length: 5000 }, (_, i) => i);
        const atInit = process.env.GREETING;
        const activationAtInit = process.env.__OW_ACTIVATION_ID;
        console.log('top level');
        function main(p) {
            runs++;
            console.log('hello', p.name);
            console.error('to stderr');
            return { runs, size: table.length, atInit, activation: process.env.__OW_ACTIVATION_ID,
                     activationAtInit, random: Math.random(), now: Date.now() };
        }
    "#;
    // Each /init with the variables OpenWhisk's invoker sets for the activation that caused it.
    let value_for = |first: &str| {
        let mut value = js(source);
        value["env"] = json!({"GREETING": "hi", "__OW_ACTIVATION_ID": first,
                              "__OW_TRANSACTION_ID": format!("tx-{first}"), "__OW_DEADLINE": "1700000000000"});
        value
    };
    ex.init("a", value_for("first-a")).expect(200);
    let started = Instant::now();
    ex.init("b", value_for("first-b")).expect(200);
    let second_init = started.elapsed();
    assert_eq!(
        ex.gauge("modules"),
        1,
        "two containers of one action share its snapshot"
    );
    let mut randoms = Vec::new();
    for (i, id) in ["a", "a", "b"].iter().enumerate() {
        let body = json!({"value": {"name": "Ada"}, "activation_id": format!("act{i}")});
        let r = ex.post(&format!("/{id}/run"), &body.to_string());
        let out = r.expect(200).json();
        assert_eq!(out["runs"], 1, "a fresh instance from the snapshot: {out}");
        assert_eq!(out["size"], 5000);
        assert_eq!(
            out["atInit"], "hi",
            "the /init's environment reaches the top level"
        );
        assert_eq!(out["activation"], format!("act{i}"));
        assert_eq!(
            out.get("activationAtInit"),
            None,
            "the top level sees no activation's variables"
        );
        assert!(
            out["now"].as_f64().unwrap() > 1.7e12,
            "the clock is the run's"
        );
        randoms.push(out["random"].as_f64().unwrap());
    }
    randoms.dedup();
    assert_eq!(
        randoms.len(),
        3,
        "Math.random is seeded per activation: {randoms:?}"
    );
    let logs = ex.log_lines("a");
    assert!(
        logs.contains(&("stdout".into(), "hello Ada".into())),
        "{logs:?}"
    );
    assert!(
        logs.contains(&("stderr".into(), "to stderr".into())),
        "{logs:?}"
    );
    // The top level ran once, at the first /init; what it printed opens the logs of each
    // container's first activation, as a Node.js container's /init writes before its runs.
    ex.assert_init_output_opens_logs(&["a", "b"], &logs, "top level");
    eprintln!("second /init of the same JavaScript action: {second_init:?}");
    a_runaway_activation_is_stopped_and_the_container_serves_the_next(&ex);
}

/// What an activation writes over the state it started from stays in its instance: the next
/// activation of the container, one of another container and ones at the same time all start
/// from the state the top level left (every instance maps the action's memory image
/// copy-on-write; none of its writes reaches the image).
#[test]
fn what_an_activation_writes_over_its_state_stays_in_its_instance() {
    let Some(ex) = js_executor(&[]) else { return };
    let source = r#"
        const big = new Uint8Array(8 << 20).fill(7);
        let total = 0;
        function main(p) {
            let changed = 0;
            for (let i = 0; i < big.length; i += 4096) if (big[i] !== 7) changed++;
            big.fill(p.n);
            total += p.n;
            return { changed, total };
        }
    "#;
    writes_stay_in_their_instance(ex, js(source));
}

/// The memories kept between engine instances change hands between actions without a trace:
/// more actions than memories are kept (16), each with a state of its own, run in turn, each
/// overwriting its state; every activation finds its own action's state as its top level left
/// it, and nothing of another action's (a kept memory is reset to the image it held, and that
/// image is unmapped before another is mapped).
#[test]
fn kept_memories_change_hands_between_actions_without_a_trace() {
    let Some(ex) = js_executor(&[]) else { return };
    let init = |mark: u64| {
        let source = format!(
            r#"
            const mark = {mark};
            const own = new Uint8Array(1 << 20).fill(mark);
            let runs = 0;
            function main() {{
                let foreign = 0;
                for (let i = 0; i < own.length; i += 4096) if (own[i] !== mark) foreign++;
                own.fill(255 - mark);
                runs++;
                return {{ mark, foreign, runs }};
            }}
            "#
        );
        ex.init(&format!("action{mark}"), js(&source)).expect(200);
    };
    let mut marks: Vec<u64> = (1..=20).collect();
    marks.iter().for_each(|&mark| init(mark));
    for round in 0..3 {
        for &mark in &marks {
            let out = ex
                .run(&format!("action{mark}"), json!({}))
                .expect(200)
                .json();
            assert_eq!(
                out,
                json!({ "mark": mark, "foreign": 0, "runs": 1 }),
                "round {round}"
            );
        }
        // A destroyed action's memories hold an image nobody can ask for: they change hands
        // first.
        let gone = marks.remove(0);
        ex.post(&format!("/action{gone}/destroy"), "").expect(200);
        marks.push(gone + 20);
        init(gone + 20);
    }
    ex.assert_healthy();
}

/// Every activation's instance ends, whether activations follow one another or overlap: a
/// hundred runs that each write 16 MiB of fresh memory leave the executor's memory where a
/// few such runs left it (an instance that outlived its answer unended would keep its 16 MiB).
#[test]
fn every_activations_instance_ends_whether_runs_follow_or_overlap() {
    let Some(ex) = js_executor(&[]) else { return };
    let source = r#"
        function main(p) {
            const block = new Uint8Array(16 << 20).fill(p.n & 0xff);
            return { n: p.n, sum: block[0] + block[block.length - 1] };
        }
    "#;
    ex.init("churn", js(source)).expect(200);
    let run = |n: u64| {
        let out = ex.run("churn", json!({ "n": n })).expect(200).json();
        assert_eq!(out, json!({ "n": n, "sum": 2 * (n & 0xff) }), "run {n}");
    };
    // A few runs first, so that the memories kept for the engine exist before measuring.
    for n in 0..8 {
        run(n);
    }
    let before = ex.rss_kib();
    std::thread::scope(|scope| {
        for worker in 0..4u64 {
            scope.spawn(move || (0..25).for_each(|n| run(100 * worker + n)));
        }
    });
    let grown = ex.rss_kib().saturating_sub(before);
    assert!(
        grown < 128 * 1024,
        "100 activations of 16 MiB each grew the executor by {grown} KiB"
    );
    ex.assert_healthy();
}

/// A runaway activation is stopped at its time limit and the container serves the next.
fn a_runaway_activation_is_stopped_and_the_container_serves_the_next(ex: &Executor) {
    let mut value =
        js("function main(p) { if (p.spin) { while (true) {} } return { fine: true } }");
    value["limits"] = json!({"timeout": 300});
    ex.init("spin", value).expect(200);
    let started = Instant::now();
    let r = ex.run("spin", json!({"spin": true}));
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.error().contains("time limit"), "{}", r.error());
    ex.assert_stopped_on_time(
        started.elapsed(),
        std::time::Duration::from_millis(300),
        "spinning JavaScript",
    );
    assert_eq!(
        ex.run("spin", json!({})).expect(200).json(),
        json!({"fine": true})
    );
}

#[test]
fn what_cannot_run_is_refused_at_init_by_name() {
    let Some(ex) = js_executor(&["--max-init-ms", "3000"]) else {
        return;
    };
    let refusals: Vec<(&str, Value, &str)> = vec![
        ("syntax", js("10 PRINT 'HELLO'\n20 GOTO 10"), "syntaxerror"),
        (
            "no_main",
            js("function notmain() {}"),
            "no function named 'main'",
        ),
        (
            "top_throw",
            js("throw new Error('at the top')"),
            "at the top",
        ),
        (
            "builtin",
            js("const fs = require('fs'); function main() { return {} }"),
            "'fs'",
        ),
        (
            "node_prefix",
            js("const cp = require('node:child_process'); exports.main = () => ({})"),
            "node:child_process",
        ),
        (
            "no_entry",
            js_zip(&[("lib/x.js", b"exports.main = () => ({})")]),
            "package.json",
        ),
        (
            "native",
            js_zip(&[
                ("index.js", b"exports.main = () => ({})"),
                ("node_modules/x/x.node", b"\x7fELF"),
            ]),
            "x.node",
        ),
        (
            "not_zip",
            json!({"kind": "nodejs:20", "code": b64(b"not a zip"), "binary": true}),
            "uncompressing",
        ),
        (
            "kind",
            json!({"kind": "java:8", "code": "x", "binary": false}),
            "java:8",
        ),
        (
            "loop",
            js("while (true) {}"),
            "longer than this executor allows",
        ),
    ];
    for (id, value, text) in refusals {
        let r = ex.init(id, value);
        assert_eq!(r.status, 502, "{id}: {}", r.text());
        assert!(
            r.error().to_lowercase().contains(&text.to_lowercase()),
            "{id}: {}",
            r.error()
        );
    }
    let mut small = js("const big = new Array(2e6).fill(1); function main() { return {} }");
    small["limits"] = json!({"memory": 4});
    let r = ex.init("small", small);
    assert_eq!(r.status, 502, "{}", r.text());
    // The executor goes on serving.
    ex.init("fine", js("function main() { return { ok: 1 } }"))
        .expect(200);
    assert_eq!(
        ex.run("fine", json!({})).expect(200).json(),
        json!({"ok": 1})
    );
}

#[test]
fn an_engine_that_does_not_load_is_the_operators_error() {
    let ex = Executor::start_with(&["--js-engine", "/nonexistent/quickjs.wasm"]);
    let r = ex.init("js", js("function main() { return {} }"));
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.error().contains("/nonexistent/quickjs.wasm"),
        "{}",
        r.error()
    );
}

#[test]
fn a_javascript_action_pre_initialised_ahead_of_time_runs_as_a_module_with_no_engine() {
    let dir = ScratchDir::new("js-snapshot");
    let source = dir.0.join("action.js");
    std::fs::write(
        &source,
        "const table = Array.from({ length: 1000 }, (_, i) => i);\n\
         const mode = process.env.MODE;\n\
         function run(p) { return { sum: table.reduce((a, b) => a + b, 0), x: p.x, mode,\n\
           activation: process.env.__OW_ACTIVATION_ID } }",
    )
    .unwrap();
    let args = ["--module", "--main", "run", "--env", "MODE=snapshot"];
    let module = dir.0.join("action.wasm");
    let module = precompiled_snapshot(&source, "--js-engine", &js_engine(), &args, &module);
    assert!(module.starts_with(b"\0asm"));

    // An executor without a JavaScript engine runs it as the module it is (precompiled for
    // builds that take artifacts only).
    let ex = Executor::start();
    ex.init_code("pre", &module, json!({})).expect(200);
    let body = json!({"value": {"x": 7}, "activation_id": "a1"});
    let out = ex.post("/pre/run", &body.to_string()).expect(200).json();
    assert_eq!(
        out,
        json!({"sum": 499500, "x": 7, "mode": "snapshot", "activation": "a1"})
    );

    // What fails to evaluate fails here, with the engine's words.
    std::fs::write(&source, "function run( {").unwrap();
    let made = precompile_snapshot(&source, "--js-engine", &js_engine(), &[]);
    assert!(!made.status.success());
    let stderr = String::from_utf8_lossy(&made.stderr);
    assert!(stderr.contains("SyntaxError"), "{stderr}");
}

/// A nodejs action's /init value for a state file (zipped or bare).
fn js_state(file: &[u8], main: &str) -> Value {
    json!({ "kind": "nodejs:20", "code": b64(file), "binary": true, "main": main })
}

#[test]
fn a_javascript_action_pre_initialised_into_a_state_file_runs_on_the_executors_engine() {
    let dir = ScratchDir::new("js-state");
    let source = dir.0.join("action.js");
    std::fs::write(
        &source,
        "console.log('loaded at ' + Date.now() + ' ' + Math.random());\n\
         const table = Array.from({ length: 1000 }, (_, i) => i);\n\
         const mode = process.env.MODE;\n\
         function run(p) { return { sum: table.reduce((a, b) => a + b, 0), x: p.x, mode } }",
    )
    .unwrap();
    let args = ["--main", "run", "--env", "MODE=state"];
    let zipped = dir.0.join("action.snapshot.zip");
    let zipped = precompiled_snapshot(&source, "--js-engine", &js_engine(), &args, &zipped);
    assert!(zipped.starts_with(b"PK"), "zipped for wsk");
    let bare = dir.0.join("action.state");
    let bare = precompiled_snapshot(&source, "--js-engine", &js_engine(), &args, &bare);

    let Some(ex) = js_executor(&[]) else { return };
    // Zipped (by the tool or anyone) or bare, under the action's main or OpenWhisk's default:
    // the state made ahead of time, its top level's output opening each container's first logs.
    ex.init("zipped", js_state(&zipped, "run")).expect(200);
    ex.init("bare", js_state(&bare, "main")).expect(200);
    let rezipped = zip_of(&[("action.snapshot", &bare)]);
    ex.init("rezipped", js_state(&rezipped, "run")).expect(200);
    for id in ["zipped", "bare", "rezipped"] {
        assert_eq!(
            ex.run(id, json!({"x": 7})).expect(200).json(),
            json!({"sum": 499500, "x": 7, "mode": "state"})
        );
    }
    let first = ex.log_lines("bare");
    let loaded = first
        .iter()
        .find(|(_, l)| l.starts_with("loaded at "))
        .map(|(_, l)| l.clone())
        .unwrap_or_else(|| panic!("the top level's line: {first:?}"));
    ex.assert_init_output_opens_logs(&["bare", "rezipped"], &first, &loaded);

    // Refused at /init, saying why: another main, a state that does not fit the container's
    // memory, a state taken on another engine, a damaged file.
    let r = ex.init("other_main", js_state(&zipped, "other"));
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(
        r.error().contains("main `run`") && r.error().contains("--main other"),
        "{}",
        r.error()
    );
    let mut small = js_state(&zipped, "run");
    small["limits"] = json!({"memory": 1});
    let r = ex.init("small", small);
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(
        r.error().contains("more than its limit of 1 MB"),
        "{}",
        r.error()
    );
    let engine_sha = wasm_artifact::sha256_hex(&std::fs::read(js_engine()).unwrap());
    let at = bare
        .windows(64)
        .position(|w| w == engine_sha.as_bytes())
        .expect("the engine's hash in the header");
    let mut foreign = bare.clone();
    foreign[at..at + 64].copy_from_slice(&[b'0'; 64]);
    let r = ex.init("foreign", js_state(&foreign, "run"));
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.error().contains("another engine"), "{}", r.error());
    let r = ex.init("damaged", js_state(&bare[..bare.len() - 9], "run"));
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.error().contains("damaged"), "{}", r.error());
    let r = ex.init(
        "mixed",
        js_state(&zip_of(&[("a.snapshot", &bare), ("index.js", b"x")]), "run"),
    );
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.error().contains("state file only"), "{}", r.error());
    ex.assert_healthy();
}

#[test]
fn an_actions_state_taken_at_init_outlives_the_executor_process() {
    let state = ScratchDir::new("js-kept-state");
    let dir = state.0.to_str().unwrap().to_owned();
    let source = "console.log('loaded at ' + Date.now() + ' ' + Math.random());\n\
                  function main() { return { ok: true } }";
    let mut lines = Vec::new();
    for round in 0..2 {
        let Some(ex) = js_executor(&["--state-dir", &dir]) else {
            return;
        };
        ex.init("a", js(source)).expect(200);
        assert_eq!(
            ex.run("a", json!({})).expect(200).json(),
            json!({"ok": true})
        );
        let logs = ex.log_lines("a");
        let line = logs.first().map(|(_, l)| l.clone()).unwrap_or_default();
        assert!(line.starts_with("loaded at "), "round {round}: {logs:?}");
        lines.push(line);
        // The state is written in the background, to a temporary file renamed into place:
        // wait until an entry is complete (`.bin`), or the next process may find none.
        let kept = state.0.join("cache").join("snapshots");
        let complete_entries = || {
            std::fs::read_dir(&kept).map_or(0, |entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "bin"))
                    .count()
            })
        };
        let started = Instant::now();
        while complete_entries() == 0 {
            assert!(
                started.elapsed().as_secs() < 30,
                "no state kept in {}",
                kept.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    // The top level ran once: the second process replays what the first one printed.
    assert_eq!(lines[0], lines[1]);
}

#[test]
fn fetch_gets_through_the_executor_with_net_access_and_fails_without() {
    let (url, server) = crate::capabilities::serve(r#"{"from": "the host"}"#);
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    let Some(ex) = js_executor(&["--net-allow", host]) else {
        return;
    };
    let source = "async function main(p) { const r = await fetch(p.url); \
                  return { status: r.status, ok: r.ok, body: await r.json() } }";
    let mut value = js(source);
    value["annotations"] = json!({"net_access": true});
    ex.init("net", value).expect(200);
    assert_eq!(
        ex.run("net", json!({"url": url})).expect(200).json(),
        json!({"status": 200, "ok": true, "body": {"from": "the host"}})
    );
    // The same action without the annotation: the promise rejects, saying why.
    ex.init("no_net", js(source)).expect(200);
    let r = ex.run("no_net", json!({"url": url}));
    r.expect(200);
    let error = r.json()["error"].to_string();
    assert!(
        error.contains("fetch failed") && error.contains("net_access"),
        "{error}"
    );
    // A host outside the operator's policy is refused the same way.
    let r = ex.run("net", json!({"url": "http://127.0.0.2:9/"}));
    assert!(
        r.json()["error"].to_string().contains("fetch failed"),
        "{}",
        r.text()
    );
    drop(ex);
    drop(server);
}

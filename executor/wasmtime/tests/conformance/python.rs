//! Actions in Python (`kind: python:*`) on the executor's engine: OpenWhisk's python action
//! contract as its own runtime's tests check it (results, errors with tracebacks, logs, the
//! environment, zips with `__main__.py`, their packages and `virtualenv/`), each action loaded
//! once into a snapshot that every activation starts from, and refusals at /init that say why.

use std::time::Instant;

use serde_json::{Value, json};

use crate::harness::{
    Executor, ScratchDir, b64, precompiled_snapshot, python_engine, writes_stay_in_their_instance,
    zip_of,
};

/// A python action's /init value for `source` (text, as `wsk action create x.py` sends it).
fn py(source: &str) -> Value {
    json!({ "kind": "python:3", "code": source, "binary": false, "main": "main" })
}

fn py_zip(entries: &[(&str, &[u8])]) -> Value {
    json!({ "kind": "python:3", "code": b64(&zip_of(entries)), "binary": true, "main": "main" })
}

/// An executor for Python actions (`None`: this build runs precompiled artifacts only).
fn py_executor(extra: &[&str]) -> Option<Executor> {
    let probe = py("def main(args):\n    return {}\n");
    Executor::with_engine("--python-engine", &python_engine(), extra, probe, "Python")
}

#[test]
fn python_results_errors_and_zips_follow_openwhisk_python_contract() {
    let Some(ex) = py_executor(&[]) else { return };
    let cases: &[(&str, &str, u16, Value)] = &[
        (
            "object",
            "def main(args):\n    return {'got': args['x']}\n",
            200,
            json!({"got": 1}),
        ),
        (
            "array",
            "def main(args):\n    return ['a', 'b']\n",
            200,
            json!(["a", "b"]),
        ),
        (
            "app_error",
            "def main(args):\n    return {'error': 'sorry'}\n",
            200,
            json!({"error": "sorry"}),
        ),
        (
            "raised",
            "def main(args):\n    return {'x': 1 / 0}\n",
            200,
            json!({"error": "division by zero"}),
        ),
        (
            "unicode",
            "def main(args):\n    s = '❄ ☃ ❄'\n    print(s)\n    return {'winter': s}\n",
            200,
            json!({"winter": "❄ ☃ ❄"}),
        ),
        (
            "string",
            "def main(args):\n    return 'a string'\n",
            502,
            json!({"error": "The action did not return a dictionary or array."}),
        ),
        (
            "exit",
            "import sys\ndef main(args):\n    sys.exit(1)\n",
            502,
            json!({"error": "command exited"}),
        ),
        (
            "stdlib",
            "import json, re, decimal, hashlib, base64, datetime, collections, dataclasses, \
             urllib.parse, xml.etree.ElementTree, asyncio\n\
             def main(args):\n    return {'sum': str(decimal.Decimal('1.1') + decimal.Decimal('2.2')), \
             'sha': hashlib.sha256(b'x').hexdigest()[:8], \
             'q': urllib.parse.quote('a b'), 'm': bool(re.match('a+', 'aaa'))}\n",
            200,
            json!({"sum": "3.3", "sha": "2d711642", "q": "a%20b", "m": true}),
        ),
    ];
    for (id, source, _, _) in cases {
        ex.init(id, py(source)).expect(200);
    }
    for (id, _, status, expected) in cases {
        let r = ex.run(id, json!({"x": 1}));
        assert_eq!(r.status, *status, "{id}: {}", r.text());
        assert_eq!(r.json(), *expected, "{id}");
    }
    let logs = ex.log_lines("raised");
    assert!(
        logs.contains(&("stderr".into(), "Traceback (most recent call last):".into())),
        "the traceback goes to the logs: {logs:?}"
    );
    assert!(
        logs.iter()
            .any(|(_, l)| l.contains("ZeroDivisionError: division by zero")),
        "{logs:?}"
    );
    assert!(
        ex.log_lines("unicode")
            .contains(&("stdout".into(), "❄ ☃ ❄".into())),
        "print() goes to stdout"
    );

    // A non-default entry point gets any JSON value as its argument, an array too.
    let mut niam = py("def niam(args):\n    return {'echo': args}\n");
    niam["main"] = json!("niam");
    ex.init("niam", niam).expect(200);
    assert_eq!(
        ex.run("niam", json!(["a", "b"])).expect(200).json(),
        json!({"echo": ["a", "b"]})
    );
    zips_import_their_modules_packages_and_virtualenv(&ex);
}

/// Zips: `__main__.py` at the top imports modules and packages beside it and the pure-Python
/// packages of its `virtualenv/`, and reads its own files by relative path.
fn zips_import_their_modules_packages_and_virtualenv(ex: &Executor) {
    let site = "virtualenv/lib/python3.11/site-packages";
    ex.init(
        "zip",
        py_zip(&[
            (
                "__main__.py",
                b"from echo import shout\nfrom helpers.fmt import box\nimport greetlib\n\
                  def main(args):\n    with open('data/workfile') as f:\n        data = f.read().strip()\n    \
                  return {'shout': shout(args['name']), 'box': box('hi'), 'data': data, \
                  'greet': greetlib.greet(args['name'])}\n",
            ),
            ("echo.py", b"def shout(s):\n    return s.upper()\n"),
            ("helpers/__init__.py", b""),
            ("helpers/fmt.py", b"def box(s):\n    return '[' + s + ']'\n"),
            ("data/workfile", b"file contents\n"),
            ("virtualenv/bin/activate_this.py", b"# activates the virtualenv\n"),
            (
                &format!("{site}/greetlib/__init__.py"),
                b"def greet(n):\n    return 'hi ' + n\n",
            ),
        ]),
    )
    .expect(200);
    assert_eq!(
        ex.run("zip", json!({"name": "zed"})).expect(200).json(),
        json!({"shout": "ZED", "box": "[hi]", "data": "file contents", "greet": "hi zed"})
    );
    for (id, value, text) in [
        (
            "no_main_py",
            py_zip(&[("echo.py", b"def main(args):\n    return {}\n")]),
            "Zip file does not include __main__.py",
        ),
        (
            "bad_venv",
            py_zip(&[
                ("__main__.py", b"def main(args):\n    return {}\n"),
                ("virtualenv/lib/python3.11/site-packages/x.py", b""),
            ]),
            "Invalid virtualenv",
        ),
    ] {
        let r = ex.init(id, value);
        assert_eq!(r.status, 502, "{id}: {}", r.text());
        assert!(r.error().contains(text), "{id}: {}", r.error());
    }
}

#[test]
fn every_python_activation_starts_from_the_snapshot_with_its_own_environment() {
    let Some(ex) = py_executor(&[]) else { return };
    let source = "import os, random, sys\n\
                  runs = 0\n\
                  table = list(range(5000))\n\
                  at_init = os.environ.get('SOME_VAR')\n\
                  empty = os.environ.get('ANOTHER_VAR')\n\
                  print('top level')\n\
                  def main(args):\n    global runs\n    runs += 1\n    \
                  print('hello', args['name'])\n    print('to stderr', file=sys.stderr)\n    \
                  return {'runs': runs, 'size': len(table), 'at_init': at_init, 'empty': empty, \
                  'activation': os.environ.get('__OW_ACTIVATION_ID'), \
                  'api_host': os.environ.get('__OW_API_HOST'), \
                  'random': random.random(), 'executable': sys.executable}\n";
    // Each /init with the variables OpenWhisk's invoker sets for the activation that caused it.
    let value_for = |first: &str| {
        let mut value = py(source);
        value["env"] = json!({"SOME_VAR": "xyz", "ANOTHER_VAR": "", "__OW_ACTIVATION_ID": first,
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
        let out = ex
            .post(&format!("/{id}/run"), &body.to_string())
            .expect(200)
            .json();
        assert_eq!(out["runs"], 1, "a fresh instance from the snapshot: {out}");
        assert_eq!(out["size"], 5000);
        assert_eq!(
            out["at_init"], "xyz",
            "the /init's environment reaches the top level"
        );
        assert_eq!(out["empty"], "");
        assert_eq!(out["activation"], format!("act{i}"));
        assert!(
            out["api_host"].is_string(),
            "the executor's __OW_API_HOST: {out}"
        );
        assert!(
            out["executable"].as_str().unwrap().contains("python"),
            "{out}"
        );
        randoms.push(out["random"].as_f64().unwrap());
    }
    randoms.dedup();
    assert_eq!(
        randoms.len(),
        3,
        "random is seeded per activation: {randoms:?}"
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
    // container's first activation, as a Python container's /init writes before its runs.
    ex.assert_init_output_opens_logs(&["a", "b"], &logs, "top level");
    eprintln!("second /init of the same Python action: {second_init:?}");

    // A runaway activation is stopped at its time limit and the container serves the next.
    let mut spin = py(
        "def main(args):\n    while args.get('spin'):\n        pass\n    return {'fine': True}\n",
    );
    spin["limits"] = json!({"timeout": 300});
    ex.init("spin", spin).expect(200);
    let started = Instant::now();
    let r = ex.run("spin", json!({"spin": true}));
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.error().contains("time limit"), "{}", r.error());
    ex.assert_stopped_on_time(
        started.elapsed(),
        std::time::Duration::from_millis(300),
        "spinning Python",
    );
    assert_eq!(
        ex.run("spin", json!({})).expect(200).json(),
        json!({"fine": true})
    );
}

/// What an activation writes over the state it started from stays in its instance, as for
/// JavaScript: the next activation, another container's and ones at the same time start from
/// the state the top level left.
#[test]
fn what_a_python_activation_writes_over_its_state_stays_in_its_instance() {
    let Some(ex) = py_executor(&[]) else { return };
    let source = r#"
big = bytearray(b"\x07") * (8 << 20)
total = 0

def main(args):
    global total
    changed = sum(1 for i in range(0, len(big), 4096) if big[i] != 7)
    big[:] = bytes([args["n"]]) * len(big)
    total += args["n"]
    return {"changed": changed, "total": total}
"#;
    writes_stay_in_their_instance(ex, py(source));
}

#[test]
fn a_namespaces_python_actions_start_from_its_started_engine_and_share_nothing_else() {
    let Some(ex) = py_executor(&[]) else { return };
    // The string-hash secret is drawn when the interpreter starts: equal hashes mean one start.
    let probe = "import builtins, json\n\
                 def main(args):\n    \
                 return {'hash': hash('openwhisk'), \
                 'leaked': hasattr(builtins, 'LEAK') or hasattr(json, 'LEAK')}\n";
    let leaky = "import builtins, json\nbuiltins.LEAK = 1\njson.LEAK = 1\n\
                 def main(args):\n    return {'hash': hash('openwhisk'), 'leaked': True}\n";
    let in_namespace = |namespace: &str, source: &str| {
        let mut value = py(source);
        value["env"] = json!({ "__OW_NAMESPACE": namespace });
        value
    };
    let hash_of = |id: &str| {
        let out = ex.run(id, json!({})).expect(200).json();
        (
            out["hash"].as_i64().unwrap(),
            out["leaked"].as_bool().unwrap(),
        )
    };
    ex.init("leaky", in_namespace("alice", leaky)).expect(200);
    ex.init("alice", in_namespace("alice", probe)).expect(200);
    ex.init("bob", in_namespace("bob", probe)).expect(200);
    ex.init("nobody", py(probe)).expect(200);
    let (leaky_hash, _) = hash_of("leaky");
    let (alice, alice_leaked) = hash_of("alice");
    let (bob, _) = hash_of("bob");
    let (nobody, _) = hash_of("nobody");
    assert_eq!(
        leaky_hash, alice,
        "two actions of a namespace start from one started engine"
    );
    assert!(
        !alice_leaked,
        "what an action's top level changes stays in its own snapshot"
    );
    assert_ne!(alice, bob, "namespaces never share a started engine");
    assert_ne!(alice, nobody, "nor does an action with no namespace");
    // A later container of the first namespace still starts from that namespace's engine.
    ex.init(
        "alice-2",
        in_namespace("alice", &format!("{probe}# another action\n")),
    )
    .expect(200);
    assert_eq!(hash_of("alice-2").0, alice);
}

#[test]
fn what_cannot_run_in_python_is_refused_at_init_with_the_reason() {
    let Some(ex) = py_executor(&["--max-init-ms", "5000"]) else {
        return;
    };
    let refusals: Vec<(&str, Value, &str)> = vec![
        (
            "syntax",
            py("Invalid Python\ndef main(args) return {}\n"),
            "SyntaxError",
        ),
        (
            "import",
            py("import iamnotsupported\ndef main(args):\n    return {}\n"),
            "No module named 'iamnotsupported'",
        ),
        (
            "unavailable",
            py("import sqlite3\ndef main(args):\n    return {}\n"),
            "without SQLite",
        ),
        (
            "exit",
            py("import sys\nsys.exit(1)\ndef main(args):\n    return {}\n"),
            "exited during initialization",
        ),
        (
            "no_main",
            py("def other(args):\n    return {}\n"),
            "no function 'main'",
        ),
        (
            "kind",
            json!({"kind": "python2:2.7", "code": "x", "binary": false}),
            "python2:2.7",
        ),
        (
            "native",
            py_zip(&[
                ("__main__.py", b"def main(args):\n    return {}\n"),
                (
                    "virtualenv/lib/python3.11/site-packages/fast.cpython-311-x86_64-linux-gnu.so",
                    b"\x7fELF",
                ),
            ]),
            "fast.cpython-311-x86_64-linux-gnu.so",
        ),
        (
            "loop",
            py("while True:\n    pass\n"),
            "longer than this executor allows",
        ),
    ];
    for (id, value, text) in refusals {
        let r = ex.init(id, value);
        assert_eq!(r.status, 502, "{id}: {}", r.text());
        assert!(r.error().contains(text), "{id}: {}", r.error());
    }
    let mut entry = py("def main(args):\n    return {}\n");
    entry["main"] = json!("os.system");
    let r = ex.init("entry", entry);
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(
        r.error().contains("not a Python function name"),
        "{}",
        r.error()
    );
    let mut small = py("big = bytearray(64 << 20)\ndef main(args):\n    return {}\n");
    small["limits"] = json!({"memory": 32});
    let r = ex.init("small", small);
    assert_eq!(r.status, 502, "{}", r.text());
    // The executor goes on serving.
    ex.init("fine", py("def main(args):\n    return {'ok': 1}\n"))
        .expect(200);
    assert_eq!(
        ex.run("fine", json!({})).expect(200).json(),
        json!({"ok": 1})
    );
}

#[test]
fn a_python_action_pre_initialised_ahead_of_time_runs_as_a_module_with_no_engine() {
    let dir = ScratchDir::new("py-snapshot");
    let source = dir.0.join("action.py");
    std::fs::write(
        &source,
        "import os\n\
         table = list(range(1000))\n\
         mode = os.environ.get('MODE')\n\
         def run(args):\n    return {'sum': sum(table), 'x': args['x'], 'mode': mode, \
         'activation': os.environ.get('__OW_ACTIVATION_ID')}\n",
    )
    .unwrap();
    let args = ["--module", "--main", "run", "--env", "MODE=snapshot"];
    let module = dir.0.join("action.wasm");
    let module = precompiled_snapshot(&source, "--python-engine", &python_engine(), &args, &module);
    assert!(module.starts_with(b"\0asm"));

    // The module is the whole engine (about 18 MB): wasmer's LLVM compiles it for longer than
    // an /init's default limit on a busy 2-core machine.
    let ex = Executor::start_with(&["--max-init-ms", "600000"]);
    ex.init_code("pre", &module, json!({})).expect(200);
    let body = json!({"value": {"x": 7}, "activation_id": "a1"});
    let out = ex.post("/pre/run", &body.to_string()).expect(200).json();
    assert_eq!(
        out,
        json!({"sum": 499500, "x": 7, "mode": "snapshot", "activation": "a1"})
    );
}

#[test]
fn a_python_action_pre_initialised_into_a_state_file_runs_on_the_executors_engine() {
    let dir = ScratchDir::new("py-state");
    let source = dir.0.join("action.py");
    std::fs::write(
        &source,
        "import os, time\n\
         print('loaded at', time.time())\n\
         table = list(range(1000))\n\
         mode = os.environ.get('MODE')\n\
         def run(args):\n    return {'sum': sum(table), 'x': args['x'], 'mode': mode}\n",
    )
    .unwrap();
    let args = ["--main", "run", "--env", "MODE=state"];
    let zipped = dir.0.join("action.snapshot.zip");
    let zipped = precompiled_snapshot(&source, "--python-engine", &python_engine(), &args, &zipped);
    let value = json!({ "kind": "python:3", "code": b64(&zipped), "binary": true, "main": "run" });

    // Taken for the Python engine: a JavaScript kind refuses it by name.
    let js_engine = crate::harness::js_engine();
    let Some(ex) = py_executor(&["--js-engine", js_engine.to_str().unwrap()]) else {
        return;
    };
    for id in ["one", "two"] {
        ex.init(id, value.clone()).expect(200);
        assert_eq!(
            ex.run(id, json!({"x": 7})).expect(200).json(),
            json!({"sum": 499500, "x": 7, "mode": "state"})
        );
        let logs = ex.log_lines(id);
        assert!(
            logs.first()
                .is_some_and(|(_, l)| l.starts_with("loaded at ")),
            "{id}: {logs:?}"
        );
    }
    let mut as_js = value.clone();
    as_js["kind"] = json!("nodejs:20");
    let r = ex.init("as_js", as_js);
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.error().contains("for the Python engine"), "{}", r.error());
}

#[test]
fn openwhisk_http_gets_through_the_executor_with_net_access_and_raises_without() {
    let (url, server) = crate::capabilities::serve(r#"{"from": "the host"}"#);
    let host = url.trim_start_matches("http://").split('/').next().unwrap();
    let Some(ex) = py_executor(&["--net-allow", host]) else {
        return;
    };
    let source = "import openwhisk_http\n\
                  def main(args):\n    r = openwhisk_http.get(args['url'])\n    \
                  return {'status': r.status, 'ok': r.ok, 'body': r.json()}\n";
    let mut value = py(source);
    value["annotations"] = json!({"net_access": true});
    ex.init("net", value).expect(200);
    assert_eq!(
        ex.run("net", json!({"url": url})).expect(200).json(),
        json!({"status": 200, "ok": true, "body": {"from": "the host"}})
    );
    // The same action without the annotation: PermissionError, saying why.
    ex.init("no_net", py(source)).expect(200);
    let r = ex.run("no_net", json!({"url": url}));
    let error = r.expect(200).json()["error"].to_string();
    assert!(error.contains("net_access"), "{error}");
    assert!(
        ex.log_lines("no_net")
            .iter()
            .any(|(_, line)| line.starts_with("PermissionError")),
        "the traceback names the exception"
    );
    drop(ex);
    drop(server);
}

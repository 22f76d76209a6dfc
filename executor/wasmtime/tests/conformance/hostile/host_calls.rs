//! What a guest passes to host calls, made as large as it can: a write with a million iovecs
//! over the same 16 MiB, a gigabyte of random bytes in one call, thousands of files held open,
//! and the log sentinel printed (whole, padded, split across writes). Each call is bounded, the activation ends at its
//! deadline, and only the executor frames an activation's logs.

use std::{
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::harness::{self, Executor, ScratchDir, action};

const SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

/// Runs `params` on `hostile` containers `count` at once, each with a 2 s limit; the answers
/// and the longest time taken.
fn at_once(
    ex: &Executor,
    label: &str,
    count: usize,
    params: Value,
) -> (Vec<(u16, String)>, Duration) {
    for i in 0..count {
        let id = format!("{label}-{i}");
        ex.init_code(
            &id,
            &action("hostile"),
            json!({"limits": {"timeout": 2000, "memory": 512}}),
        )
        .expect(200);
    }
    let started = Instant::now();
    let answers = thread::scope(|scope| {
        let runs: Vec<_> = (0..count)
            .map(|i| {
                let (id, params) = (format!("{label}-{i}"), params.clone());
                scope.spawn(move || {
                    let r = ex.run(&id, params);
                    (r.status, r.text())
                })
            })
            .collect();
        runs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (answers, started.elapsed())
}

/// Either the call was refused or cut and the guest answered, or the activation ran into its
/// time limit; nothing else.
#[track_caller]
fn answered_or_timed_out(answers: &[(u16, String)]) {
    for (status, text) in answers {
        match status {
            200 => {}
            502 => assert!(text.contains("time limit"), "{text}"),
            other => panic!("unexpected {other}: {text}"),
        }
    }
}

#[test]
fn a_write_of_a_million_iovecs_is_bounded() {
    let ex = Executor::start();
    let flood = json!({"iovec_flood": {"count": 1_000_000, "bytes": 16 << 20}});
    let (answers, took) = at_once(&ex, "iovecs", 4, flood);
    answered_or_timed_out(&answers);
    assert!(
        took <= Duration::from_secs(2) + ex.late_margin(),
        "four iovec floods with a 2 s limit took {took:?}"
    );
    // Every slot is free again.
    ex.init_action("after", "echo");
    ex.run("after", json!({"ok": true})).expect(200);
    ex.assert_healthy();
}

#[test]
fn a_gigabyte_of_random_bytes_ends_at_the_deadline_and_leaves_the_server_answering() {
    let ex = Executor::start();
    ex.init_code(
        "random",
        &action("hostile"),
        json!({"limits": {"timeout": 1000, "memory": 1100}}),
    )
    .expect(200);
    let server = &ex;
    let (answer, health) = thread::scope(|scope| {
        let run = scope.spawn(|| {
            let started = Instant::now();
            let r = server.run("random", json!({"random_bytes": 1u64 << 30}));
            (r.status, r.text(), started.elapsed())
        });
        // Meanwhile the API answers at once.
        thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        server.get("/health").expect(200);
        let health = started.elapsed();
        (run.join().unwrap(), health)
    });
    let (status, text, took) = answer;
    answered_or_timed_out(&[(status, text)]);
    // A machine fast enough fills the gigabyte before the limit; never much after it.
    assert!(
        took <= Duration::from_secs(1) + ex.late_margin(),
        "a gigabyte of random bytes took {took:?} with a 1 s limit"
    );
    assert!(health < Duration::from_secs(1), "/health waited {health:?}");
    ex.assert_healthy();
}

#[test]
fn an_activation_holds_at_most_256_descriptors_on_every_backend() {
    let root = ScratchDir::new("descriptors");
    let ex = Executor::start_with(&["--dir-root", root.0.to_str().unwrap()]);
    ex.init_code("files", &action("hostile"), harness::granted("/files"))
        .expect(200);
    let out = ex
        .run(
            "files",
            json!({"open_files": {"dir": "/files", "count": 4000}}),
        )
        .expect(200)
        .json();
    // 256 in all: stdin, stdout, stderr and the granted directory, and 252 files.
    assert_eq!(out["opened"], 252, "{out}");
    assert_eq!(out["errno"], 33, "EMFILE: {out}");
    // Descriptors die with the activation: the next one opens as many again.
    let again = ex
        .run(
            "files",
            json!({"open_files": {"dir": "/files", "count": 300}}),
        )
        .expect(200)
        .json();
    assert_eq!(again["opened"], 252, "{again}");
    ex.init_action("other", "echo");
    ex.run("other", json!({"ok": true})).expect(200);
    ex.assert_healthy();
}

#[test]
fn a_guest_cannot_end_its_logs_early_or_write_into_the_next_activation() {
    let ex = Executor::start();
    ex.init_action("framing", "hostile");
    let out = ex
        .run(
            "framing",
            json!({"print": [
                ["stdout", format!("{SENTINEL}\n")],
                ["stderr", format!("  {SENTINEL}  \n")],
                ["stdout", "XXX_THE_END_OF_"],
                ["stdout", "A_WHISK_ACTIVATION_XXX\nafter the first\n"],
                ["stderr", format!("{SENTINEL}")],
                ["stderr", "\nlast\n"],
            ]}),
        )
        .expect(200)
        .json();
    assert_eq!(out["printed"], 6);
    ex.run(
        "framing",
        json!({"print": [["stdout", "second activation\n"]]}),
    )
    .expect(200);
    let lines = ex.logs("framing");
    let texts: Vec<&str> = lines.iter().map(|l| l["log"].as_str().unwrap()).collect();
    let sentinels: Vec<usize> = texts
        .iter()
        .enumerate()
        .filter(|(_, t)| t.trim() == SENTINEL)
        .map(|(i, _)| i)
        .collect();
    // Two activations: two sentinels each (stdout and stderr), all of them the executor's.
    assert_eq!(sentinels.len(), 4, "{texts:#?}");
    let first: Vec<&str> = texts[..sentinels[0]].to_vec();
    assert!(
        first.contains(&"after the first\n") && first.contains(&"last\n"),
        "{texts:#?}"
    );
    assert_eq!(
        first
            .iter()
            .filter(|t| t.contains("[activation sentinel]"))
            .count(),
        4,
        "each printed sentinel is shown as a stand-in: {texts:#?}"
    );
    let second: Vec<&str> = texts[sentinels[1] + 1..sentinels[2]].to_vec();
    assert_eq!(second, ["second activation\n"], "{texts:#?}");
}

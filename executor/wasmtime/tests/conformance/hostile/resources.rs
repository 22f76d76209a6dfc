//! Exhaustion attempts: memory through tables and extra memories, the stack, log floods, huge
//! results. Each ends as the action's error, or is refused at /init; the executor's own memory
//! stays bounded and it goes on serving.

use serde_json::json;

use crate::harness::{Executor, action};

/// A WASI command whose `_start` runs `body` and prints `{"ok":N}` with N the i32 it leaves.
fn command(body: &str, extra: &str) -> Vec<u8> {
    let wat = format!(
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  {extra}
  (memory (export "memory") 1)
  (data (i32.const 1024) "{{\"ok\":0}}\n{{\"ok\":1}}\n")
  (func (export "_start")
    (local $r i32)
    (local.set $r {body})
    (i32.store (i32.const 0) (i32.add (i32.const 1024) (i32.mul (local.get $r) (i32.const 9))))
    (i32.store (i32.const 4) (i32.const 9))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#
    );
    wat::parse_str(&wat).expect("valid WAT fixture")
}

#[test]
fn growing_a_table_without_bound_is_refused_not_fatal() {
    let ex = Executor::start();
    // table.grow by 2^31 elements: the growth fails (-1), as the spec allows, on every backend.
    let grow = command(
        "(i32.eq (table.grow $t (ref.null func) (i32.const 0x7fffffff)) (i32.const -1))",
        "(table $t 1 funcref)",
    );
    ex.init_code("grow", &grow, json!({})).expect(200);
    assert_eq!(
        ex.run("grow", json!({})).expect(200).json(),
        json!({"ok": 1})
    );
    // Many smaller steps end the same way, long before the executor's memory is at risk.
    let steps = command(
        "(block $done (result i32)
           (loop $more
             (br_if $done (i32.const 1) (i32.eq (table.grow $t (ref.null func) (i32.const 1048576)) (i32.const -1)))
             (br $more))
           (i32.const 0))",
        "(table $t 1 funcref)",
    );
    ex.init_code("steps", &steps, json!({})).expect(200);
    let before = ex.rss_kib();
    assert_eq!(
        ex.run("steps", json!({})).expect(200).json(),
        json!({"ok": 1})
    );
    assert!(
        ex.rss_kib() < before + 256 * 1024,
        "tables grew the executor from {before} KiB to {} KiB",
        ex.rss_kib()
    );
    ex.assert_healthy();
}

#[test]
fn a_huge_initial_table_is_refused_at_init_or_run() {
    let ex = Executor::start();
    let huge = command("(i32.const 1)", "(table 200000000 funcref)");
    let r = ex.init_code("huge", &huge, json!({}));
    if r.status == 200 {
        let run = ex.run("huge", json!({}));
        assert_eq!(run.status, 502, "{}", run.text());
    } else {
        r.expect(502);
    }
    ex.assert_healthy();
}

#[test]
fn a_second_memory_cannot_double_the_limit() {
    let ex = Executor::start();
    let two = command("(i32.const 1)", "(memory $second 1)");
    let r = ex.init_code("two", &two, json!({"limits": {"memory": 64}}));
    assert_eq!(
        r.status,
        502,
        "a module with two memories is refused: {}",
        r.text()
    );
    ex.assert_healthy();
}

#[test]
fn runaway_recursion_is_a_trap() {
    let ex = Executor::start();
    ex.init_action("deep", "hostile");
    let r = ex.run("deep", json!({"recurse": 100_000_000}));
    assert!(
        r.expect(502).error().starts_with("The action trapped:"),
        "{}",
        r.text()
    );
    assert_eq!(
        ex.run("deep", json!({"recurse": 10})).expect(200).json()["depth"],
        10
    );
    ex.assert_healthy();
}

#[test]
fn a_log_flood_is_capped_in_memory_not_only_in_text() {
    let ex = Executor::start();
    ex.init_code(
        "flood",
        &action("hostile"),
        json!({"limits": {"logs": 10, "timeout": 60000}}),
    )
    .expect(200);
    let before = ex.rss_kib();
    // Ten million empty lines: no text, but a line each.
    let r = ex.run("flood", json!({"log_lines": 10_000_000, "line_bytes": 0}));
    assert_eq!(r.expect(200).json(), json!({"logged_lines": 10_000_000}));
    let grown = ex.rss_kib().saturating_sub(before);
    let logs = ex.logs("flood");
    assert!(
        grown < 256 * 1024,
        "the executor grew by {grown} KiB for 10 MB of logs"
    );
    let last = &logs[logs.len() - 3]["log"];
    assert!(
        last.as_str().unwrap().starts_with("Logs were truncated"),
        "{last}"
    );
    ex.assert_healthy();
}

#[test]
fn a_result_larger_than_allowed_is_the_actions_error() {
    let ex = Executor::start_with(&["--max-result-mb", "1"]);
    ex.init_action("big", "hostile");
    let r = ex.run("big", json!({"result_bytes": 2 << 20}));
    let error = r.expect(502).error();
    assert!(
        error.starts_with("The action produced a response that exceeded the allowed length: ")
            && error.ends_with(" > 1048576 bytes."),
        "{error}"
    );
    let r = ex.run("big", json!({"result_bytes": 1000}));
    assert_eq!(r.expect(200).json()["big"].as_str().unwrap().len(), 1000);
    ex.assert_healthy();
}

#[test]
fn containers_that_come_and_go_leave_no_descriptors_or_memory_behind() {
    let root = crate::harness::ScratchDir::new("churn-root");
    // One connection thread at most (the pool builds'): more would come and go with the
    // client's connections, each with its runtime's descriptors, which are not the containers'.
    let ex = Executor::start_with(&[
        "--dir-root",
        root.0.to_str().unwrap(),
        "--connection-threads",
        "1",
    ]);
    let cycle = |round: usize| {
        for i in 0..20 {
            let id = format!("churn-{round}-{i}");
            let dir = format!("/tenant-{i}");
            ex.init_code(&id, &action("hostile"), crate::harness::granted(&dir))
                .expect(200);
            let ops = json!([{"op": "write", "path": format!("{dir}/f.txt"), "content": "x"}]);
            ex.run(&id, json!({"fs": ops})).expect(200);
            ex.post(&format!("/{id}/destroy"), "").expect(200);
        }
    };
    // One round first so that lazily created pools, caches and threads exist before measuring.
    cycle(0);
    let (fds, rss) = (ex.open_fds(), ex.rss_kib());
    for round in 1..=5 {
        cycle(round);
    }
    assert!(
        ex.open_fds() <= fds + 4,
        "100 granted containers came and went: {fds} descriptors before, {} after",
        ex.open_fds()
    );
    assert!(
        ex.rss_kib() < rss + 64 * 1024,
        "100 granted containers came and went: {rss} KiB before, {} KiB after",
        ex.rss_kib()
    );
    ex.assert_healthy();
}

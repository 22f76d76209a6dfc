//! Each /run gets a fresh instance: concurrent and consecutive activations share no state, not
//! even memory an earlier one wrote;
//! destroy frees a container.

use serde_json::json;

use crate::harness::Executor;

#[test]
fn concurrent_runs_of_one_container_never_share_state() {
    let ex = std::sync::Arc::new(Executor::start());
    ex.init_action("counter", "counter");
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let ex = std::sync::Arc::clone(&ex);
            std::thread::spawn(move || {
                (0..5)
                    .map(|_| ex.run("counter", json!({})).expect(200).json()["count"].clone())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for worker in workers {
        for count in worker.join().unwrap() {
            assert_eq!(
                count, 1,
                "a guest global counter reads 1 in every activation"
            );
        }
    }
}

#[test]
fn a_fresh_instance_finds_no_byte_an_earlier_activation_wrote() {
    // Each activation checks two buffers larger than the pages an ended instance's slot resets
    // in place (the rest go back to the kernel), then overwrites them: one left zero by the
    // module, one given by its data; then pages it grows the memory by, more than any backend
    // resets in place. One at a time the activations reuse a slot (or a kept
    // memory), at once they take several; the two containers take each other's.
    let ex = std::sync::Arc::new(Executor::start());
    ex.init_action("probe", "hostile");
    ex.init_action("other-tenant", "hostile");
    let probe = |ex: &Executor| {
        for id in ["probe", "other-tenant"] {
            let result = ex.run(id, json!({"residue": true})).expect(200).json();
            let residue = &result["residue"];
            assert!(residue["bytes"].as_u64().unwrap() > 128 * 1024, "{result}");
            assert_eq!(residue["zeroed_dirty"], 0, "{id}: {result}");
            assert_eq!(residue["initialized_dirty"], 0, "{id}: {result}");
            assert!(
                residue["grown_bytes"].as_u64().unwrap() > 1 << 20,
                "{result}"
            );
            assert_eq!(residue["grown_dirty"], 0, "{id}: {result}");
        }
    };
    for _ in 0..4 {
        probe(&ex);
    }
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let ex = std::sync::Arc::clone(&ex);
            std::thread::spawn(move || (0..4).for_each(|_| probe(&ex)))
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
}

#[test]
fn destroy_frees_the_container_and_the_id() {
    let ex = Executor::start();
    ex.init_action("c", "add");
    ex.init_action("other", "add");
    assert_eq!(
        ex.get("/containers").json()["containers"],
        json!(["c", "other"])
    );
    ex.post("/c/destroy", "").expect(200);
    ex.run("c", json!({})).expect(404);
    assert_eq!(ex.get("/containers").json()["containers"], json!(["other"]));
    // The id can be used again, with other code.
    ex.init_action("c", "echo");
    assert_eq!(
        ex.run("c", json!({"k": "v"})).expect(200).json(),
        json!({"k": "v"})
    );
    ex.run("other", json!({"param1": 1, "param2": 2}))
        .expect(200);
}

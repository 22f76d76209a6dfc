//! `counter`: a `static` counter incremented once per invocation → `{"count": n}`.
//!
//! Every /run gets a fresh instance, so `n` is always 1; anything else means state leaked
//! between activations.

use openwhisk::{Error, Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNT: AtomicU64 = AtomicU64::new(0);

fn counter(_params: Value) -> Result<Value, Error> {
    let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(json!({ "count": n }))
}

// A second entry point so a test can call the export twice on one instance if it wants to.
openwhisk::export!(count, counter);

openwhisk::main!(counter);

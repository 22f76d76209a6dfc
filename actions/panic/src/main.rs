//! `panic`: `{"message": "…"}` panics; under `panic = "abort"` that is a Wasm trap (natively a
//! SIGABRT), which the executor reports as a failed activation. `{"ok": true}` returns normally.

use openwhisk::{Error, Value, json, params};

fn boom(p: Value) -> Result<Value, Error> {
    if params::bool_or(&p, "ok", false)? {
        return Ok(json!({ "ok": true }));
    }
    let message = params::str_or(&p, "message", "panic requested")?;
    panic!("{message}");
}

openwhisk::main!(boom);

//! `add`: `{"param1": 2, "param2": 2}` → `{"result": 4}`; also exports the entry `multiply`.

use openwhisk::{Error, Value, json, params};

/// Integers stay integers in the result (`4`, not `4.0`).
fn number_value(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn operands(p: &Value) -> Result<(f64, f64), Error> {
    Ok((params::number(p, "param1")?, params::number(p, "param2")?))
}

fn add(p: Value) -> Result<Value, Error> {
    let (a, b) = operands(&p)?;
    Ok(json!({ "result": number_value(a + b) }))
}

fn product(p: Value) -> Result<Value, Error> {
    let (a, b) = operands(&p)?;
    Ok(json!({ "result": number_value(a * b) }))
}

// `wsk action create mul add.zip --kind wasm:0.1 --main multiply` calls this export.
openwhisk::export!(multiply, product);

openwhisk::main!(add);

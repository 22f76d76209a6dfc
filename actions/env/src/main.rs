//! `env`: reports what the guest sees: `{"context": {__OW_* variables}, "env": {the others},
//! "argv_count": n, "stdin_matches_argv": bool, "stdin_bytes": n, "parsed": Context}`.
//!
//! The executor passes the parameters both as `argv[1]` and on stdin; this action reads stdin
//! fully and compares it with `argv[1]` (ignoring trailing whitespace).

use openwhisk::serde_json::Map;
use openwhisk::{Context, Error, Value, json};
use std::io::Read;

fn env(_params: Value) -> Result<Value, Error> {
    let mut context = Map::new();
    let mut others = Map::new();
    for (key, value) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        let value = json!(value.to_string_lossy());
        if key.starts_with("__OW_") {
            context.insert(key, value);
        } else {
            others.insert(key, value);
        }
    }
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // `run` only reads stdin when there is no argv[1]; then stdin is already consumed here.
    let mut stdin = Vec::new();
    let stdin_read = std::io::stdin().read_to_end(&mut stdin);
    let stdin_text = String::from_utf8_lossy(&stdin);
    let stdin_matches_argv = match (args.get(1), &stdin_read) {
        (Some(arg), Ok(_)) => arg.trim_end() == stdin_text.trim_end(),
        _ => false,
    };
    let ctx = Context::from_env();
    Ok(json!({
        "context": context,
        "env": others,
        "argv_count": args.len(),
        "stdin_matches_argv": stdin_matches_argv,
        "stdin_bytes": stdin.len(),
        "stdin_error": stdin_read.err().map(|e| e.to_string()),
        "parsed": {
            "namespace": ctx.namespace,
            "action_name": ctx.action_name,
            "action_version": ctx.action_version,
            "activation_id": ctx.activation_id,
            "transaction_id": ctx.transaction_id,
            "deadline": ctx.deadline,
            "api_key": ctx.api_key,
            "api_host": ctx.api_host,
            "remaining_ms": ctx.remaining().map(|d| d.as_millis() as u64),
        },
    }))
}

openwhisk::main!(env);

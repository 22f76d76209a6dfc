//! Fuzz target: an /init or /run request body as the executor decodes it (JSON, the action's
//! code inside it, the activation's environment and deadline).

#![no_main]

use libfuzzer_sys::fuzz_target;
use wasm_executor_fuzz::{
    decode_action_code,
    protocol::{InitRequest, RunRequest, env_text},
};

fuzz_target!(|body: &[u8]| {
    if let Ok(init) = serde_json::from_slice::<InitRequest>(body) {
        let value = init.value.unwrap_or_default();
        for text in value.env.iter().flatten().map(|(_, v)| env_text(v)) {
            assert!(!text.is_empty() || body.len() > 2);
        }
        if let Some(code) = value.code {
            decode_action_code(&code, value.binary);
        }
    }
    if let Ok(run) = serde_json::from_slice::<RunRequest>(body) {
        for (name, _) in run.activation_env() {
            assert!(name.starts_with("__OW_"), "{name}");
        }
        let _ = run.deadline_epoch_ms();
        // The parameters pass to the guest as sent: always one whole JSON value (syntactically:
        // a lone UTF-16 surrogate escape such as "\udc00" passes, as JSON's grammar allows).
        serde_json::from_str::<serde::de::IgnoredAny>(run.value.get()).expect("one JSON value");
    }
});

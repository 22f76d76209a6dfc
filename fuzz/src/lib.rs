//! The executor's decoders of untrusted input (the `wasm-executor-decode` crate, which the
//! executor library re-exports; no server and no Wasm runtime is built), with the checks every
//! decoded value must pass.

pub use wasm_executor_decode::{
    code, host_limits, poll, protocol, snapshot_file, sources,
    wasi::{abi, guest},
};

use code::{CodeError, ModuleCode};

/// The module limit the targets decode with: small, so that inflating zips are cut early.
pub const MAX_MODULE_BYTES: usize = 1 << 20;

/// The longest error text an action's developer may get back for bad code (a few names and a
/// reason, never the archive's whole listing or a header's whole text).
pub const MAX_ERROR_CHARS: usize = 2048;

/// Decodes action code as /init does and checks what holds for every outcome: a module is a
/// module with its own hash; an envelope survives a round trip; an error is short.
pub fn decode_action_code(code: &str, binary: Option<bool>) {
    match code::decode(code, binary, MAX_MODULE_BYTES)
        .as_ref()
        .map_err(CodeError::to_string)
        .and_then(|decoded| decoded.module().map_err(|e| e.to_string()))
    {
        Ok(ModuleCode::Portable { wasm, sha256 }) => {
            assert!(wasm.starts_with(b"\0asm"), "a portable module is Wasm");
            assert_eq!(sha256, wasm_artifact::sha256_hex(wasm));
            // What the WAMR build checks at /init before WAMR sees the module.
            let _ = wamr_profile::check_tables(wasm);
            let _ = wamr_profile::declares_start_function(wasm);
        }
        Ok(ModuleCode::Precompiled(envelope)) => {
            let serialized = envelope.to_bytes();
            let again = wasm_artifact::Envelope::parse(&serialized)
                .expect("an envelope that parsed parses again after serialization");
            assert_eq!(again.payload, envelope.payload);
            // A tag as the WAMR build makes it (the build takes the version from WAMR's sources,
            // which this crate does not build; the tag is only compared), and its CPU check.
            let target = wamr_profile::TargetProfile::this_machine().unwrap();
            let _ = wamr_profile::unwrap(
                &wamr_profile::profile_tag("2.4.3", target),
                target.cpu,
                wamr_profile::cpu::host_has,
                &envelope.payload,
            );
        }
        Err(text) => assert_short(&text),
    }
}

/// Decodes the code of a JavaScript or Python action as /init does (sources, or a state file
/// made ahead of time) and checks what holds: a state file that parses survives a round trip;
/// an error is short.
pub fn decode_language_code(code: &str, binary: Option<bool>) {
    let state = match sources::decode(code, binary, MAX_MODULE_BYTES) {
        Ok(sources::ActionCode::State(bytes)) => bytes,
        Ok(sources::ActionCode::Source(_)) => return,
        Err(error) => return assert_short(&error.to_string()),
    };
    match snapshot_file::StateFile::parse(&state, 1 << 30) {
        Ok(file) => {
            let again = snapshot_file::StateFile::parse(&file.to_bytes(), 1 << 30)
                .expect("a state file that parsed parses again after serialization");
            assert_eq!(again, file);
        }
        Err(error) => assert_short(&error.to_string()),
    }
}

fn assert_short(text: &str) {
    assert!(
        text.chars().count() <= MAX_ERROR_CHARS,
        "an error answer of {} characters: {}…",
        text.chars().count(),
        text.chars().take(200).collect::<String>()
    );
}

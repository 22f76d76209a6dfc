//! Fuzz target: the bytes of an uploaded action (a module, a zip, a signed envelope, a state
//! file) after base64, through the decoding /init does for Wasm and for language actions, and
//! the envelope parser on its own; the same bytes as text code (WebAssembly text, or a binary
//! file sent as a string).

#![no_main]

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use wasm_executor_fuzz::{decode_action_code, decode_language_code};

fuzz_target!(|bytes: &[u8]| {
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    decode_action_code(&encoded, Some(true));
    decode_language_code(&encoded, Some(true));
    if let Ok(text) = std::str::from_utf8(bytes) {
        decode_action_code(text, Some(false));
    }
    if let Ok(envelope) = wasm_artifact::Envelope::parse(bytes) {
        assert!(wasm_artifact::Envelope::is_envelope(bytes));
        let serialized = envelope.to_bytes();
        let again = wasm_artifact::Envelope::parse(&serialized).unwrap();
        assert_eq!(again.header.payload_sha256, envelope.header.payload_sha256);
    }
});

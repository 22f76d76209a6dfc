//! The envelope format: magic, a JSON header naming runtime, version, target and content
//! hashes, an optional Ed25519 signature over magic and header, then the native payload.
//!
//! ```text
//! "OWWASMA1" | u32 LE header length | header JSON | u32 LE signature length (0 or 64)
//!            | signature | payload
//! ```
//! The header carries the payload's SHA-256, so a signature over the header covers the payload.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{RuntimeId, TrustedKeys, sha256_hex, signing::SIGNATURE_LEN};

/// The first eight bytes of every envelope.
pub const MAGIC: &[u8; 8] = b"OWWASMA1";

/// Headers larger than this are refused before parsing (a real header is ~300 bytes).
const MAX_HEADER_LEN: usize = 64 * 1024;

/// What an artifact is for, and what it must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeHeader {
    /// `wasmtime`, `wasmer` or `wamr`.
    pub runtime: String,
    /// The exact runtime version that produced the payload.
    pub runtime_version: String,
    /// Target triple the native code is for, e.g. `aarch64-unknown-linux-gnu`.
    pub target: String,
    /// SHA-256 (hex) of the payload that follows.
    pub payload_sha256: String,
    /// SHA-256 (hex) of the portable module the payload was compiled from.
    pub wasm_sha256: String,
}

/// An envelope, parsed from bytes it borrows or made with a payload it owns; the payload is
/// not trusted until [`Envelope::verify`] says so.
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    pub header: EnvelopeHeader,
    header_bytes: Cow<'a, [u8]>,
    signature: Option<[u8; SIGNATURE_LEN]>,
    pub payload: Cow<'a, [u8]>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum EnvelopeError {
    #[error("artifact envelope is truncated or malformed: {0}")]
    Malformed(String),
    #[error("artifact payload does not match the hash in its envelope (corrupted or tampered)")]
    PayloadHashMismatch,
    #[error(
        "artifact is for {found}, but this executor runs {expected}; precompile the module for {expected} or upload portable Wasm"
    )]
    WrongRuntime { found: String, expected: String },
    #[error(
        "artifact was made by {runtime} {found}, but this executor runs {runtime} {expected}; precompile it again with the matching wasm-precompile"
    )]
    WrongVersion {
        runtime: String,
        found: String,
        expected: String,
    },
    #[error(
        "artifact is native code for {found}, but this executor runs on {expected}; precompile it for this machine: `wasm-precompile compile --runtime RUNTIME -- IN.wasm --target {expected} --sign-key KEY.pem --zip -o OUT.zip`"
    )]
    WrongTarget { found: String, expected: String },
    #[error(
        "artifact is not signed; sign it with the operator key (`wasm-precompile compile --runtime RUNTIME -- IN.wasm --sign-key KEY.pem --zip -o OUT.zip`, the key made by `wasm-precompile keygen --out KEY`), or start the executor with --allow-unsigned-artifacts to load unsigned native code"
    )]
    Unsigned,
    #[error("artifact signature does not verify with any trusted operator key")]
    BadSignature,
}

impl Envelope<'static> {
    /// Wraps a payload; sign it with [`Envelope::sign`] before writing it out.
    pub fn new(runtime: RuntimeId, target: &str, wasm: &[u8], payload: Vec<u8>) -> Self {
        let header = EnvelopeHeader {
            runtime: runtime.name().to_owned(),
            runtime_version: runtime.locked_version().to_owned(),
            target: target.to_owned(),
            payload_sha256: sha256_hex(&payload),
            wasm_sha256: sha256_hex(wasm),
        };
        let header_bytes = serde_json::to_vec(&header).expect("header serializes");
        Envelope {
            header,
            header_bytes: Cow::Owned(header_bytes),
            signature: None,
            payload: Cow::Owned(payload),
        }
    }
}

impl<'a> Envelope<'a> {
    /// True when `bytes` starts like an envelope.
    pub fn is_envelope(bytes: &[u8]) -> bool {
        bytes.starts_with(MAGIC)
    }

    pub fn is_signed(&self) -> bool {
        self.signature.is_some()
    }

    /// The bytes a signature covers: magic and header.
    fn signed_bytes(header_bytes: &[u8]) -> Vec<u8> {
        [MAGIC.as_slice(), header_bytes].concat()
    }

    pub fn sign(&mut self, key: &crate::OperatorKey) {
        self.signature = Some(key.sign(&Self::signed_bytes(&self.header_bytes)));
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let sig: &[u8] = self.signature.as_ref().map_or(&[], |s| s.as_slice());
        let mut out =
            Vec::with_capacity(16 + self.header_bytes.len() + sig.len() + self.payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.header_bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.header_bytes);
        out.extend_from_slice(&(sig.len() as u32).to_le_bytes());
        out.extend_from_slice(sig);
        out.extend_from_slice(&self.payload);
        out
    }

    /// Parses the framing only, borrowing header and payload from `bytes`; nothing is trusted
    /// yet.
    pub fn parse(bytes: &'a [u8]) -> Result<Envelope<'a>, EnvelopeError> {
        let malformed = |what: &str| EnvelopeError::Malformed(what.to_owned());
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| malformed("bad magic"))?;
        let (header_bytes, rest) =
            take_block(rest, MAX_HEADER_LEN).ok_or_else(|| malformed("header"))?;
        let header: EnvelopeHeader = serde_json::from_slice(header_bytes)
            .map_err(|e| EnvelopeError::Malformed(format!("header: {e}")))?;
        let (sig, payload) =
            take_block(rest, SIGNATURE_LEN).ok_or_else(|| malformed("signature"))?;
        let signature = match sig.len() {
            0 => None,
            SIGNATURE_LEN => Some(sig.try_into().expect("length checked")),
            _ => return Err(malformed("signature length")),
        };
        Ok(Envelope {
            header,
            header_bytes: Cow::Borrowed(header_bytes),
            signature,
            payload: Cow::Borrowed(payload),
        })
    }

    /// Checks everything that must hold before a single payload byte is deserialized:
    /// the runtime, its exact version and the target, the payload hash, and the signature
    /// (or, when `allow_unsigned`, its absence). A present but invalid signature is always refused.
    pub fn verify(
        &self,
        runtime: RuntimeId,
        target: &str,
        keys: &TrustedKeys,
        allow_unsigned: bool,
    ) -> Result<(), EnvelopeError> {
        match &self.signature {
            Some(sig) => {
                if !keys.verifies(&Self::signed_bytes(&self.header_bytes), sig) {
                    return Err(EnvelopeError::BadSignature);
                }
            }
            None if allow_unsigned => {}
            None => return Err(EnvelopeError::Unsigned),
        }
        if self.header.runtime != runtime.name() {
            return Err(EnvelopeError::WrongRuntime {
                found: self.header.runtime.clone(),
                expected: runtime.name().to_owned(),
            });
        }
        if self.header.runtime_version != runtime.locked_version() {
            return Err(EnvelopeError::WrongVersion {
                runtime: runtime.name().to_owned(),
                found: self.header.runtime_version.clone(),
                expected: runtime.locked_version().to_owned(),
            });
        }
        if self.header.target != target {
            return Err(EnvelopeError::WrongTarget {
                found: self.header.target.clone(),
                expected: target.to_owned(),
            });
        }
        if sha256_hex(&self.payload) != self.header.payload_sha256 {
            return Err(EnvelopeError::PayloadHashMismatch);
        }
        Ok(())
    }
}

/// Splits `u32 LE length | block` off the front of `bytes`, refusing blocks over `max`.
fn take_block(bytes: &[u8], max: usize) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    if len > max {
        return None;
    }
    let rest = &bytes[4..];
    Some((rest.get(..len)?, &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OperatorKey;

    fn sample() -> Envelope<'static> {
        Envelope::new(
            RuntimeId::Wasmtime,
            "x86_64-unknown-linux-gnu",
            b"\0asm",
            vec![1, 2, 3],
        )
    }

    #[test]
    fn signed_envelope_round_trips_and_verifies() {
        let key = OperatorKey::generate();
        let mut env = sample();
        env.sign(&key);
        let bytes = env.to_bytes();
        let parsed = Envelope::parse(&bytes).unwrap();
        assert!(
            matches!(parsed.payload, std::borrow::Cow::Borrowed(_)),
            "the payload is borrowed, not copied"
        );
        assert_eq!(parsed.header, env.header);
        assert_eq!(parsed.payload, vec![1, 2, 3]);
        let keys = TrustedKeys::from_keys(vec![key.verifying_key()]);
        parsed
            .verify(
                RuntimeId::Wasmtime,
                "x86_64-unknown-linux-gnu",
                &keys,
                false,
            )
            .unwrap();
    }

    #[test]
    fn refusals_name_the_mismatch() {
        let key = OperatorKey::generate();
        let other = OperatorKey::generate();
        let keys = TrustedKeys::from_keys(vec![key.verifying_key()]);
        let mut env = sample();
        assert_eq!(
            env.verify(
                RuntimeId::Wasmtime,
                "x86_64-unknown-linux-gnu",
                &keys,
                false
            ),
            Err(EnvelopeError::Unsigned)
        );
        env.sign(&other);
        assert_eq!(
            env.verify(RuntimeId::Wasmtime, "x86_64-unknown-linux-gnu", &keys, true),
            Err(EnvelopeError::BadSignature)
        );
        env.sign(&key);
        assert!(matches!(
            env.verify(RuntimeId::Wasmer, "x86_64-unknown-linux-gnu", &keys, false),
            Err(EnvelopeError::WrongRuntime { .. })
        ));
        assert!(matches!(
            env.verify(
                RuntimeId::Wasmtime,
                "aarch64-unknown-linux-gnu",
                &keys,
                false
            ),
            Err(EnvelopeError::WrongTarget { .. })
        ));
        let mut bytes = env.to_bytes();
        *bytes.last_mut().unwrap() ^= 1;
        assert_eq!(
            Envelope::parse(&bytes).unwrap().verify(
                RuntimeId::Wasmtime,
                "x86_64-unknown-linux-gnu",
                &keys,
                false
            ),
            Err(EnvelopeError::PayloadHashMismatch)
        );
    }

    #[test]
    fn truncated_input_is_malformed_not_a_panic() {
        let bytes = sample().to_bytes();
        for cut in 0..bytes.len() - 3 {
            let _ = Envelope::parse(&bytes[..cut]);
        }
        assert!(matches!(
            Envelope::parse(b"OWWASMA1\xff\xff\xff\xff"),
            Err(EnvelopeError::Malformed(_))
        ));
    }
}

//! Precompiled Wasm artifacts travel in a signed envelope: this crate defines it, signs it,
//! verifies it and names the runtimes, versions and targets it can be made for.

pub mod envelope;
pub mod package;
pub mod runtime;
pub mod signing;

pub use envelope::{Envelope, EnvelopeError, EnvelopeHeader, MAGIC};
pub use runtime::{RuntimeId, host_target};
pub use signing::{KeyError, OperatorKey, TrustedKeys};

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`: the content hash used in envelopes and cache keys.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

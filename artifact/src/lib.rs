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

/// The file name of the artifact the precompilers make from `stem.wasm` for `runtime` and
/// `target` (`quickjs.wamr-x86_64.owart`); the WAMR executor finds an engine's artifact beside
/// the engine by this name.
pub fn artifact_file_name(stem: &str, runtime: RuntimeId, target: &str) -> String {
    format!("{stem}.{runtime}-{}.owart", target_arch(target))
}

/// The architecture of a target triple (`aarch64` of `aarch64-unknown-linux-gnu`).
pub fn target_arch(target: &str) -> &str {
    target.split('-').next().unwrap_or("unknown")
}

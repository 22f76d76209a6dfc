//! Operator keys: Ed25519 keys in PEM files; the precompiler signs with the private key, the
//! executor trusts the public keys it is given.

use std::path::Path;

use ed25519_dalek::{
    Signature, Signer, SigningKey, Verifier, VerifyingKey,
    pkcs8::{
        DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey,
        spki::der::pem::LineEnding,
    },
};
use thiserror::Error;

pub(crate) const SIGNATURE_LEN: usize = 64;

#[derive(Debug, Error)]
pub enum KeyError {
    #[error("cannot read key file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not an Ed25519 {kind} key in PEM format")]
    Format { path: String, kind: &'static str },
}

/// The operator's private signing key.
pub struct OperatorKey(SigningKey);

impl OperatorKey {
    pub fn generate() -> Self {
        OperatorKey(SigningKey::generate(&mut rand::rngs::OsRng))
    }

    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = read(path)?;
        SigningKey::from_pkcs8_pem(&text)
            .map(OperatorKey)
            .map_err(|_| KeyError::Format {
                path: path.display().to_string(),
                kind: "private",
            })
    }

    /// PEM (PKCS#8) text of the private key.
    pub fn private_pem(&self) -> String {
        self.0
            .to_pkcs8_pem(LineEnding::LF)
            .expect("an Ed25519 key encodes")
            .to_string()
    }

    /// PEM (SPKI) text of the public key, for the executor's `--trusted-key`.
    pub fn public_pem(&self) -> String {
        self.0
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("an Ed25519 key encodes")
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        self.0.verifying_key()
    }

    pub(crate) fn sign(&self, message: &[u8]) -> [u8; SIGNATURE_LEN] {
        self.0.sign(message).to_bytes()
    }
}

/// The public keys whose signatures an executor accepts.
#[derive(Debug, Default, Clone)]
pub struct TrustedKeys(Vec<VerifyingKey>);

impl TrustedKeys {
    pub fn from_keys(keys: Vec<VerifyingKey>) -> Self {
        TrustedKeys(keys)
    }

    /// Loads public keys (PEM) from files.
    pub fn load(paths: &[impl AsRef<Path>]) -> Result<Self, KeyError> {
        paths
            .iter()
            .map(|p| {
                let p = p.as_ref();
                VerifyingKey::from_public_key_pem(&read(p)?).map_err(|_| KeyError::Format {
                    path: p.display().to_string(),
                    kind: "public",
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(TrustedKeys)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8; SIGNATURE_LEN]) -> bool {
        let signature = Signature::from_bytes(signature);
        self.0.iter().any(|k| k.verify(message, &signature).is_ok())
    }
}

fn read(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(|source| KeyError::Read {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trip() {
        let dir = std::env::temp_dir().join(format!("wasm-artifact-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = OperatorKey::generate();
        std::fs::write(dir.join("k.pem"), key.private_pem()).unwrap();
        std::fs::write(dir.join("k.pub"), key.public_pem()).unwrap();
        let loaded = OperatorKey::load(&dir.join("k.pem")).unwrap();
        let trusted = TrustedKeys::load(&[dir.join("k.pub")]).unwrap();
        assert!(trusted.verifies(b"m", &loaded.sign(b"m")));
        assert!(TrustedKeys::load(&[dir.join("k.pem")]).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}

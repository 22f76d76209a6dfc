//! An engine's native code for a backend that would otherwise interpret it (WAMR): the artifact
//! `wasm-precompile-wamr --engine` made of the engine, found beside the engine's file under the
//! name the precompiler gives it, so that the engine runs as AOT code. An artifact that is
//! missing or does not fit this engine and executor is logged, and the engine interpreted.

use std::path::Path;

use wasm_artifact::{Envelope, RuntimeId, TrustedKeys, artifact_file_name, host_target};

/// The command that makes the artifact, for the log.
const HOW_TO_MAKE: &str = "wasm-precompile compile --runtime wamr -- ENGINE.wasm --engine";

/// Where the artifact of the engine at `engine` lies: beside it, named by runtime and target.
pub fn path_beside(engine: &Path, runtime: RuntimeId) -> Option<std::path::PathBuf> {
    let stem = engine.file_stem()?.to_string_lossy();
    Some(engine.with_file_name(artifact_file_name(&stem, runtime, &host_target())))
}

/// The bytes of the artifact beside `engine`, if there is one that can be read.
pub fn read_beside(engine: &Path, runtime: RuntimeId) -> Option<Vec<u8>> {
    let path = path_beside(engine, runtime)?;
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            tracing::info!(
                engine = %engine.display(),
                artifact = %path.display(),
                "no native code beside the engine: it is interpreted; `{HOW_TO_MAKE}` makes it"
            );
            None
        }
        Err(error) => {
            tracing::warn!(artifact = %path.display(), %error, "the engine's native code cannot be read: the engine is interpreted");
            None
        }
    }
}

/// `bytes` as the verified artifact of the prepared engine whose SHA-256 is `prepared_sha256`:
/// made by this runtime's version for this machine, its payload intact, signed by a trusted key
/// if signed at all (the operator's own file, like the engine beside it), and compiled from
/// exactly that module. Else `None`, and the reason logged.
pub fn verified<'a>(
    bytes: &'a [u8],
    prepared_sha256: &str,
    runtime: RuntimeId,
    keys: &TrustedKeys,
) -> Option<Envelope<'a>> {
    let checked = Envelope::parse(bytes)
        .and_then(|envelope| {
            envelope.verify(runtime, &host_target(), keys, true)?;
            Ok(envelope)
        })
        .map_err(|e| e.to_string())
        .and_then(|envelope| {
            if envelope.header.wasm_sha256 == prepared_sha256 {
                Ok(envelope)
            } else {
                Err(format!(
                    "it was compiled from module {}, not from this engine as this executor prepares it ({prepared_sha256}): another engine, or another version of the executor",
                    envelope.header.wasm_sha256
                ))
            }
        });
    match checked {
        Ok(envelope) => Some(envelope),
        Err(why) => {
            tracing::warn!(%why, "the native code beside the engine does not fit it: the engine is interpreted; make it again with `{HOW_TO_MAKE}`");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_artifact::{OperatorKey, sha256_hex};

    const MODULE: &[u8] = b"\0asm\x01\0\0\0";

    fn artifact(runtime: RuntimeId, target: &str, module: &[u8]) -> Envelope<'static> {
        Envelope::new(runtime, target, module, b"native code".to_vec())
    }

    #[test]
    fn the_artifact_lies_beside_the_engine_by_the_precompilers_name() {
        let path = path_beside(Path::new("/opt/engines/quickjs.wasm"), RuntimeId::Wamr).unwrap();
        let arch = host_target().split('-').next().unwrap().to_owned();
        assert_eq!(
            path,
            Path::new(&format!("/opt/engines/quickjs.wamr-{arch}.owart"))
        );
    }

    #[test]
    fn only_an_intact_artifact_of_this_very_module_for_this_executor_is_taken() {
        let sha = sha256_hex(MODULE);
        let keys = TrustedKeys::default();
        let good = artifact(RuntimeId::Wamr, &host_target(), MODULE).to_bytes();
        assert!(verified(&good, &sha, RuntimeId::Wamr, &keys).is_some());

        let other_module =
            artifact(RuntimeId::Wamr, &host_target(), b"\0asm\x01\0\0\0\0").to_bytes();
        let other_runtime = artifact(RuntimeId::Wasmer, &host_target(), MODULE).to_bytes();
        let other_target =
            artifact(RuntimeId::Wamr, "riscv64gc-unknown-linux-gnu", MODULE).to_bytes();
        let mut tampered = good.clone();
        *tampered.last_mut().unwrap() ^= 1;
        let mut signed = artifact(RuntimeId::Wamr, &host_target(), MODULE);
        signed.sign(&OperatorKey::generate());
        let untrusted = signed.to_bytes();
        for (what, bytes) in [
            ("another module", &other_module),
            ("another runtime", &other_runtime),
            ("another target", &other_target),
            ("a changed payload", &tampered),
            ("a key nobody trusts", &untrusted),
            ("no envelope", &MODULE.to_vec()),
        ] {
            assert!(
                verified(bytes, &sha, RuntimeId::Wamr, &keys).is_none(),
                "{what}"
            );
        }
    }
}

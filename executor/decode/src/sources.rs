//! The code of an action written in a language the executor runs on an engine (JavaScript,
//! Python): source text, or a zip of source files (an npm package with its bundled
//! `node_modules`, a Python package with its `virtualenv/`).
//! Zips are read with limits; what cannot run on the engine is refused by name. An action
//! pre-initialised ahead of time (`wasm-precompile snapshot`) arrives as its state file, bare
//! or alone in a zip.

use std::{collections::BTreeMap, io::Read};

use bytes::Bytes;
use thiserror::Error;

use crate::code::{CodeError, decode_base64, stored_range};

/// Most files a zipped action may hold (npm packages bring many small ones).
pub const MAX_FILES: usize = 20_000;
/// Native extensions: compiled for a CPU, never for the engine.
const NATIVE_SUFFIXES: [&str; 3] = [".node", ".so", ".dylib"];

/// An action's sources as the engine receives them.
#[derive(Debug, PartialEq)]
pub enum Sources {
    /// One file of source text (the code itself, sent with `binary: false`).
    Text(String),
    /// The text files of a zip by their path in it; files that are not UTF-8 text are left
    /// out, as no source can load them.
    Files(BTreeMap<String, String>),
}

/// What the code of an action in such a language is.
#[derive(Debug, PartialEq)]
pub enum ActionCode {
    Source(Sources),
    /// The bytes of a state file (`crate::snapshot_file`): the action's engine state, taken
    /// ahead of time, instead of its sources (a slice of the decoded upload, not a copy).
    State(Bytes),
}

#[derive(Debug, Error)]
pub enum SourcesError {
    #[error(
        "There was an error uncompressing the action archive: the code is marked binary but is not base64 of a zip ({0})"
    )]
    NotZip(String),
    #[error("There was an error uncompressing the action archive: {0}")]
    Zip(String),
    #[error("the action archive holds more than {MAX_FILES} files")]
    TooManyFiles,
    #[error("the action's code is larger than the limit of {limit_mb} MB")]
    TooLarge { limit_mb: usize },
    #[error("the action archive holds `{0}`, a path outside the archive")]
    UnsafePath(String),
    #[error(
        "the action archive holds the native extension `{0}`, which cannot run on the executor's WebAssembly engines; bundle pure JavaScript or Python only"
    )]
    NativeExtension(String),
    #[error(
        "the action archive holds the pre-initialised action `{0}` and other files ({1}); a zip of a pre-initialised action holds its state file only"
    )]
    StateAndOthers(String, String),
    #[error(transparent)]
    Code(#[from] CodeError),
}

/// Reads `code`: with `binary: true` base64 of a zip or of a state file; with `binary: false`
/// text; unflagged, a zip or a state file when it is base64 of one, else text. At most
/// `max_bytes` of sources.
pub fn decode(
    code: &str,
    binary: Option<bool>,
    max_bytes: usize,
) -> Result<ActionCode, SourcesError> {
    let too_large = || SourcesError::TooLarge {
        limit_mb: max_bytes >> 20,
    };
    let is_archive = |bytes: &Vec<u8>| bytes.starts_with(b"PK") || is_state(bytes);
    let archive = match binary {
        Some(false) => None,
        Some(true) => Some(decode_base64(code).map_err(|e| SourcesError::NotZip(e.to_string()))?),
        None => decode_base64(code).ok().filter(is_archive),
    }
    .map(Bytes::from);
    match archive {
        Some(bytes) if is_state(&bytes) => {
            if bytes.len() > max_bytes {
                return Err(too_large());
            }
            Ok(ActionCode::State(bytes))
        }
        Some(bytes) => of_zip(bytes, max_bytes),
        None if code.len() > max_bytes => Err(too_large()),
        None => Ok(ActionCode::Source(Sources::Text(code.to_owned()))),
    }
}

fn is_state(bytes: &[u8]) -> bool {
    bytes.starts_with(crate::snapshot_file::MAGIC)
}

/// The text files of a zip's `bytes`, at most `max_bytes` of them; or the state file it
/// holds alone.
pub fn of_zip(bytes: Bytes, max_bytes: usize) -> Result<ActionCode, SourcesError> {
    let zip_error = |e: zip::result::ZipError| SourcesError::Zip(e.to_string());
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&bytes[..]))
        .map_err(|e| SourcesError::NotZip(e.to_string()))?;
    if archive.len() > MAX_FILES {
        return Err(SourcesError::TooManyFiles);
    }
    let mut files = BTreeMap::new();
    let mut state: Option<(String, Bytes)> = None;
    let mut total = 0usize;
    for index in 0..archive.len() {
        let entry = archive.by_index(index).map_err(zip_error)?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().trim_start_matches("./").to_owned();
        if entry.enclosed_name().is_none() || name.starts_with('/') {
            return Err(SourcesError::UnsafePath(name));
        }
        if NATIVE_SUFFIXES.iter().any(|suffix| name.ends_with(suffix)) {
            return Err(SourcesError::NativeExtension(name));
        }
        // A state file stored as it is (as wasm-precompile zips it) is taken in place; a
        // checksum that does not match is left to the reader below, which says so.
        if state.is_none()
            && let Some(range) = stored_range(&entry, bytes.len())
            && bytes[range.clone()].starts_with(crate::snapshot_file::MAGIC)
            && crc32fast::hash(&bytes[range.clone()]) == entry.crc32()
        {
            total += range.len();
            if total > max_bytes {
                return Err(SourcesError::TooLarge {
                    limit_mb: max_bytes >> 20,
                });
            }
            state = Some((name, bytes.slice(range)));
            continue;
        }
        let limit = (max_bytes - total) as u64 + 1;
        // Room for the size the entry declares, within the limit (a lie costs no more than
        // the limit allows): the file is read into one allocation, not grown by doubling.
        let mut text = Vec::with_capacity(entry.size().min(limit) as usize);
        entry
            .take(limit)
            .read_to_end(&mut text)
            .map_err(|e| SourcesError::Zip(format!("{name}: {e}")))?;
        total += text.len();
        if total > max_bytes {
            return Err(SourcesError::TooLarge {
                limit_mb: max_bytes >> 20,
            });
        }
        if is_state(&text) && state.is_none() {
            state = Some((name, text.into()));
        } else if let Ok(text) = String::from_utf8(text) {
            files.insert(name, text);
        }
    }
    match state {
        None => Ok(ActionCode::Source(Sources::Files(files))),
        Some((_, bytes)) if files.is_empty() => Ok(ActionCode::State(bytes)),
        Some((name, _)) => {
            let others: Vec<&str> = files.keys().map(String::as_str).take(5).collect();
            Err(SourcesError::StateAndOthers(name, others.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use base64::Engine as _;

    use super::*;

    fn zip_b64(entries: &[(&str, &[u8])]) -> String {
        zip_b64_with(entries, zip::CompressionMethod::Deflated)
    }

    fn zip_b64_with(entries: &[(&str, &[u8])], method: zip::CompressionMethod) -> String {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(method);
        for (name, data) in entries {
            w.start_file(*name, options).unwrap();
            w.write_all(data).unwrap();
        }
        base64::engine::general_purpose::STANDARD.encode(w.finish().unwrap().into_inner())
    }

    #[test]
    fn text_and_zips_are_told_apart_by_the_flag_or_by_content() {
        let source = "function main() { return {}; }";
        assert_eq!(
            decode(source, Some(false), 1 << 20).unwrap(),
            ActionCode::Source(Sources::Text(source.into()))
        );
        assert_eq!(
            decode(source, None, 1 << 20).unwrap(),
            ActionCode::Source(Sources::Text(source.into()))
        );
        let zip = zip_b64(&[
            ("index.js", b"exports.main = () => ({})"),
            ("logo.png", b"\x89PNG\xff\xfe"),
        ]);
        for flag in [Some(true), None] {
            let ActionCode::Source(Sources::Files(files)) = decode(&zip, flag, 1 << 20).unwrap()
            else {
                panic!()
            };
            assert_eq!(
                files.keys().collect::<Vec<_>>(),
                ["index.js"],
                "binary files are left out"
            );
        }
    }

    #[test]
    fn a_state_file_is_recognised_bare_or_alone_in_a_zip() {
        let state = [&crate::snapshot_file::MAGIC[..], b"rest"].concat();
        let bare = base64::engine::general_purpose::STANDARD.encode(&state);
        for flag in [Some(true), None] {
            assert_eq!(
                decode(&bare, flag, 1 << 20).unwrap(),
                ActionCode::State(state.clone().into())
            );
            for method in [
                zip::CompressionMethod::Stored,
                zip::CompressionMethod::Deflated,
            ] {
                let zipped = zip_b64_with(&[("hello.snapshot", &state)], method);
                assert_eq!(
                    decode(&zipped, flag, 1 << 20).unwrap(),
                    ActionCode::State(state.clone().into()),
                    "{method:?}"
                );
            }
        }
        // A stored state file is taken in place only when its checksum holds.
        let stored = zip_b64_with(
            &[("hello.snapshot", &state)],
            zip::CompressionMethod::Stored,
        );
        let mut damaged = base64::engine::general_purpose::STANDARD
            .decode(&stored)
            .unwrap();
        let at = damaged
            .windows(4)
            .position(|w| w == b"rest")
            .expect("stored as it is");
        damaged[at] ^= 1;
        let damaged = base64::engine::general_purpose::STANDARD.encode(damaged);
        let e = decode(&damaged, Some(true), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum"), "{e}");
        let mixed = zip_b64(&[("hello.snapshot", &state), ("index.js", b"x")]);
        let e = decode(&mixed, Some(true), 1 << 20).unwrap_err().to_string();
        assert!(
            e.contains("hello.snapshot") && e.contains("index.js"),
            "{e}"
        );
        assert!(matches!(
            decode(&bare, Some(true), 4),
            Err(SourcesError::TooLarge { .. })
        ));
    }

    #[test]
    fn what_cannot_run_is_refused_by_name() {
        let native = zip_b64(&[("node_modules/x/build/x.node", b"\x7fELF")]);
        let e = decode(&native, Some(true), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.node") && e.contains("native extension"),
            "{e}"
        );
        let e = decode("bm90IGEgemlw", Some(true), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("uncompressing"), "{e}");
        let big = zip_b64(&[("index.js", &[b'x'; 5000])]);
        assert!(matches!(
            decode(&big, Some(true), 4096),
            Err(SourcesError::TooLarge { .. })
        ));
        assert!(matches!(
            decode(&"y".repeat(5000), Some(false), 4096),
            Err(SourcesError::TooLarge { .. })
        ));
    }
}

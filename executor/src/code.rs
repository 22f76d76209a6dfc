//! Turns the `code` of an /init into one module: base64 of a zip holding one module, or of a
//! bare module; the module is portable Wasm or one of our signed artifacts. Everything else is
//! refused with an error that says what was found.

use std::io::Read;

use base64::Engine as _;
use thiserror::Error;
use wasm_artifact::{Envelope, EnvelopeError};

const WASM_MAGIC: &[u8] = b"\0asm";
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
const EMPTY_ZIP_MAGIC: &[u8] = b"PK\x05\x06";
const ELF_MAGIC: &[u8] = b"\x7fELF";
const WAMR_AOT_MAGIC: &[u8] = b"\0aot";
const WASMER_ARTIFACT_MAGIC: &[u8] = b"wasmer-universal";

/// Most entries a zip may hold: an action is one module, perhaps with a few files beside it.
const MAX_ZIP_ENTRIES: usize = 1000;
/// Names listed in an error about a zip's contents; the rest are counted.
const NAMES_SHOWN: usize = 10;

/// The module an /init carries, before the backend prepares it.
#[derive(Debug)]
pub enum ModuleCode {
    /// Portable WebAssembly, compiled (or taken from the cache) by the backend.
    Portable { wasm: Vec<u8>, sha256: String },
    /// A precompiled artifact whose envelope is still to be verified.
    Precompiled(Envelope),
}

#[derive(Debug, Error)]
pub enum CodeError {
    #[error("action code is not valid base64: {0}")]
    Base64(base64::DecodeError),
    #[error("action code is empty")]
    Empty,
    #[error("action code is not a valid zip archive: {0}")]
    Zip(String),
    #[error("the zip archive holds no WebAssembly module (found: {0})")]
    NoModule(String),
    #[error(
        "the zip archive holds {0} entries; an action is one module (at most {MAX_ZIP_ENTRIES} entries)"
    )]
    TooManyEntries(usize),
    #[error("the zip archive holds {count} modules ({names}); an action must hold exactly one")]
    SeveralModules { count: usize, names: String },
    #[error("the module is larger than the limit of {limit_mb} MB")]
    TooLarge { limit_mb: usize },
    #[error("{0}")]
    NotAModule(String),
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
}

/// Decodes `code` (base64) into one module, reading at most `max_module_bytes` from a zip entry.
pub fn decode(code: &str, max_module_bytes: usize) -> Result<ModuleCode, CodeError> {
    let compact: Vec<u8> = code.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&compact)
        .map_err(CodeError::Base64)?;
    if bytes.is_empty() {
        return Err(CodeError::Empty);
    }
    let module = if bytes.starts_with(ZIP_MAGIC) || bytes.starts_with(EMPTY_ZIP_MAGIC) {
        single_module_from_zip(&bytes, max_module_bytes)?
    } else {
        bytes
    };
    classify(module)
}

fn classify(bytes: Vec<u8>) -> Result<ModuleCode, CodeError> {
    if bytes.starts_with(WASM_MAGIC) {
        let sha256 = wasm_artifact::sha256_hex(&bytes);
        return Ok(ModuleCode::Portable {
            wasm: bytes,
            sha256,
        });
    }
    if Envelope::is_envelope(&bytes) {
        return Ok(ModuleCode::Precompiled(Envelope::parse(&bytes)?));
    }
    Err(CodeError::NotAModule(describe_foreign(&bytes)))
}

/// Names what a non-module file looks like, so the user learns what went wrong.
fn describe_foreign(bytes: &[u8]) -> String {
    if bytes.starts_with(ELF_MAGIC) {
        "the code is a bare native artifact (ELF) without our signed envelope; precompile it with wasm-precompile or upload portable Wasm".into()
    } else if bytes.starts_with(WASMER_ARTIFACT_MAGIC) {
        "the code is a bare wasmer artifact without our signed envelope; precompile it with wasm-precompile --runtime wasmer".into()
    } else if bytes.starts_with(WAMR_AOT_MAGIC) {
        "the code is a bare WAMR AOT file without our envelope; precompile it with wasm-precompile --runtime wamr".into()
    } else if bytes.starts_with(b"(module") || bytes.starts_with(b"(component") {
        "the code is WebAssembly text; compile it to a binary .wasm first".into()
    } else {
        let head: String = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!(
            "the code is not a WebAssembly module or a wasm-precompile artifact (starts with {head})"
        )
    }
}

fn is_module(head: &[u8]) -> bool {
    head.starts_with(WASM_MAGIC) || Envelope::is_envelope(head)
}

fn single_module_from_zip(bytes: &[u8], max_module_bytes: usize) -> Result<Vec<u8>, CodeError> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| CodeError::Zip(e.to_string()))?;
    if archive.len() > MAX_ZIP_ENTRIES {
        return Err(CodeError::TooManyEntries(archive.len()));
    }
    let mut modules = Vec::new();
    let mut others = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .map_err(|e| CodeError::Zip(e.to_string()))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_owned();
        let mut head = [0u8; 8];
        let read = read_up_to(&mut entry, &mut head)
            .map_err(|e| CodeError::Zip(format!("{name}: {e}")))?;
        if is_module(&head[..read]) {
            modules.push((index, name));
        } else {
            others.push(name);
        }
    }
    match modules.len() {
        0 => Err(CodeError::NoModule(if others.is_empty() {
            "an empty archive".into()
        } else {
            names(&others)
        })),
        1 => {
            let (index, name) = &modules[0];
            let entry = archive
                .by_index(*index)
                .map_err(|e| CodeError::Zip(e.to_string()))?;
            let mut out = Vec::with_capacity((entry.size() as usize).min(max_module_bytes));
            // Read one byte past the limit so an oversized (or zip-bomb) entry is detected.
            entry
                .take(max_module_bytes as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| CodeError::Zip(format!("{name}: {e}")))?;
            if out.len() > max_module_bytes {
                return Err(CodeError::TooLarge {
                    limit_mb: max_module_bytes >> 20,
                });
            }
            Ok(out)
        }
        count => Err(CodeError::SeveralModules {
            count,
            names: names(&modules.into_iter().map(|(_, n)| n).collect::<Vec<_>>()),
        }),
    }
}

/// The first few of `all`, then how many more there are; each name cut to a readable length.
fn names(all: &[String]) -> String {
    let mut shown: Vec<String> = all
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| {
            if n.chars().count() > 100 {
                format!("{}…", n.chars().take(100).collect::<String>())
            } else {
                n.clone()
            }
        })
        .collect();
    if all.len() > NAMES_SHOWN {
        shown.push(format!("and {} more", all.len() - NAMES_SHOWN));
    }
    shown.join(", ")
}

fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 1 << 20;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, data) in entries {
            w.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn bare_and_zipped_modules_decode() {
        let wasm = b"\0asm\x01\0\0\0";
        assert!(matches!(
            decode(&b64(wasm), LIMIT),
            Ok(ModuleCode::Portable { .. })
        ));
        let zipped = zip_of(&[("README", b"hi"), ("action.wasm", wasm)]);
        assert!(matches!(
            decode(&b64(&zipped), LIMIT),
            Ok(ModuleCode::Portable { .. })
        ));
        // base64 split over lines, as some tools write it
        let wrapped = b64(wasm)
            .chars()
            .map(|c| format!("{c}\n"))
            .collect::<String>();
        assert!(matches!(
            decode(&wrapped, LIMIT),
            Ok(ModuleCode::Portable { .. })
        ));
    }

    #[test]
    fn bad_code_is_refused_with_a_reason() {
        assert!(matches!(
            decode("not base64!!", LIMIT),
            Err(CodeError::Base64(_))
        ));
        assert!(matches!(decode("", LIMIT), Err(CodeError::Empty)));
        assert!(matches!(
            decode(&b64(b"PK\x03\x04garbage"), LIMIT),
            Err(CodeError::Zip(_))
        ));
        let two = zip_of(&[
            ("a.wasm", b"\0asm\x01\0\0\0"),
            ("b.wasm", b"\0asm\x01\0\0\0"),
        ]);
        assert!(matches!(
            decode(&b64(&two), LIMIT),
            Err(CodeError::SeveralModules { count: 2, .. })
        ));
        let none = zip_of(&[("main.py", b"print(1)")]);
        let err = decode(&b64(&none), LIMIT).unwrap_err().to_string();
        assert!(err.contains("main.py"), "{err}");
        let elf = decode(&b64(b"\x7fELF\x02\x01\x01"), LIMIT)
            .unwrap_err()
            .to_string();
        assert!(elf.contains("ELF"), "{elf}");
        let wasmer = decode(&b64(b"wasmer-universal\0\0\0\0"), LIMIT)
            .unwrap_err()
            .to_string();
        assert!(wasmer.contains("bare wasmer artifact"), "{wasmer}");
        let text = decode(&b64(b"hello world"), LIMIT).unwrap_err().to_string();
        assert!(text.contains("not a WebAssembly module"), "{text}");
    }

    #[test]
    fn crowded_archives_get_short_answers() {
        let names: Vec<String> = (0..1001).map(|i| format!("file-{i}.txt")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let crowded = zip_of(&entries);
        let err = decode(&b64(&crowded), LIMIT).unwrap_err().to_string();
        assert!(err.contains("1001 entries"), "{err}");
        let some = zip_of(&entries[..50]);
        let err = decode(&b64(&some), LIMIT).unwrap_err().to_string();
        assert!(err.contains("file-9.txt, and 40 more"), "{err}");
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn oversized_entries_are_refused() {
        let mut big = b"\0asm\x01\0\0\0".to_vec();
        big.resize(LIMIT + 10, 0);
        let zipped = zip_of(&[("big.wasm", &big)]);
        assert!(matches!(
            decode(&b64(&zipped), LIMIT),
            Err(CodeError::TooLarge { .. })
        ));
    }
}

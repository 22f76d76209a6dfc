//! Turns the `code` of an /init into one module: base64 of a zip holding one module, or of a
//! bare module, or WebAssembly text; the module is portable Wasm or one of our signed
//! artifacts. Everything else is refused with an error that says what was found and what to do.

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
/// Characters of a WebAssembly text compiler's message passed on (it quotes the source line).
const TEXT_ERROR_CHARS: usize = 600;
/// What a user whose code arrived in the wrong form should do instead.
const ZIP_IT: &str = "zip the module and create the action from the zip: \
    `zip NAME.zip NAME.wasm && wsk action create NAME NAME.zip --kind wasm:0.1`";

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
    #[error(
        "the action's code arrived as text, not base64: a binary .wasm file was sent as a string \
         (what `wsk action create NAME NAME.wasm` does, as wsk sends only .zip and .jar files as \
         binary), and its bytes that are not UTF-8 were lost on the way; {ZIP_IT}"
    )]
    BinarySentAsText,
    #[error(
        "the action's code is text (binary: false) but not WebAssembly text, which starts with \
         `(module`; {ZIP_IT}, or upload the module's WebAssembly text (.wat)"
    )]
    NotWebAssemblyText,
    #[error("the WebAssembly text does not compile: {0}")]
    WebAssemblyText(String),
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

/// Decodes `code` into one module, reading at most `max_module_bytes` from a zip entry.
/// `binary` is the /init's flag: OpenWhisk sets it false when the code is not base64, i.e. text.
pub fn decode(
    code: &str,
    binary: Option<bool>,
    max_module_bytes: usize,
) -> Result<ModuleCode, CodeError> {
    if is_webassembly_text(code) {
        return compile_text(code, max_module_bytes);
    }
    if looks_like_binary_sent_as_text(code) {
        return Err(CodeError::BinarySentAsText);
    }
    if binary == Some(false) {
        return Err(CodeError::NotWebAssemblyText);
    }
    let bytes = decode_base64(code)?;
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

/// Base64 as sent, decoded without a copy; only text with line breaks or other whitespace in
/// it (as `base64` and MIME encoders wrap it) is decoded again from a copy without them.
fn decode_base64(code: &str) -> Result<Vec<u8>, CodeError> {
    let base64 = base64::engine::general_purpose::STANDARD;
    base64.decode(code).or_else(|error| {
        if !code.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err(CodeError::Base64(error));
        }
        let compact: Vec<u8> = code.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        base64.decode(&compact).map_err(CodeError::Base64)
    })
}

/// WebAssembly text starts with a module form or a comment; base64 has neither `(` nor `;`.
fn is_webassembly_text(code: &str) -> bool {
    let start = code.trim_start();
    start.starts_with('(') || start.starts_with(";;")
}

/// A binary file read as a string: Wasm's magic with its NUL, other control bytes, or the
/// replacement character a JSON encoder puts where bytes were not UTF-8. Base64 has none.
fn looks_like_binary_sent_as_text(code: &str) -> bool {
    code.chars()
        .take(4096)
        .any(|c| c == '\u{FFFD}' || (c.is_control() && !c.is_ascii_whitespace()))
}

fn compile_text(text: &str, max_module_bytes: usize) -> Result<ModuleCode, CodeError> {
    let too_large = CodeError::TooLarge {
        limit_mb: max_module_bytes >> 20,
    };
    if text.len() > max_module_bytes {
        return Err(too_large);
    }
    let wasm = wat::parse_str(text).map_err(|e| {
        let message = e.to_string();
        CodeError::WebAssemblyText(if message.chars().count() > TEXT_ERROR_CHARS {
            format!(
                "{}…",
                message.chars().take(TEXT_ERROR_CHARS).collect::<String>()
            )
        } else {
            message
        })
    })?;
    if wasm.len() > max_module_bytes {
        return Err(too_large);
    }
    classify(wasm)
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
        "the code is base64 of WebAssembly text; send the text itself, or compile it to a binary .wasm".into()
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
            decode(&b64(wasm), None, LIMIT),
            Ok(ModuleCode::Portable { .. })
        ));
        let zipped = zip_of(&[("README", b"hi"), ("action.wasm", wasm)]);
        assert!(matches!(
            decode(&b64(&zipped), None, LIMIT),
            Ok(ModuleCode::Portable { .. })
        ));
        // base64 split over lines, as some tools write it
        let wrapped = b64(wasm)
            .chars()
            .map(|c| format!("{c}\n"))
            .collect::<String>();
        assert!(matches!(
            decode(&wrapped, None, LIMIT),
            Ok(ModuleCode::Portable { .. })
        ));
    }

    #[test]
    fn bad_code_is_refused_with_a_reason() {
        assert!(matches!(
            decode("not base64!!", None, LIMIT),
            Err(CodeError::Base64(_))
        ));
        assert!(matches!(decode("", None, LIMIT), Err(CodeError::Empty)));
        assert!(matches!(
            decode(&b64(b"PK\x03\x04garbage"), None, LIMIT),
            Err(CodeError::Zip(_))
        ));
        let two = zip_of(&[
            ("a.wasm", b"\0asm\x01\0\0\0"),
            ("b.wasm", b"\0asm\x01\0\0\0"),
        ]);
        assert!(matches!(
            decode(&b64(&two), None, LIMIT),
            Err(CodeError::SeveralModules { count: 2, .. })
        ));
        let none = zip_of(&[("main.py", b"print(1)")]);
        let err = decode(&b64(&none), None, LIMIT).unwrap_err().to_string();
        assert!(err.contains("main.py"), "{err}");
        let elf = decode(&b64(b"\x7fELF\x02\x01\x01"), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(elf.contains("ELF"), "{elf}");
        let wasmer = decode(&b64(b"wasmer-universal\0\0\0\0"), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(wasmer.contains("bare wasmer artifact"), "{wasmer}");
        let text = decode(&b64(b"hello world"), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(text.contains("not a WebAssembly module"), "{text}");
    }

    #[test]
    fn crowded_archives_get_short_answers() {
        let names: Vec<String> = (0..1001).map(|i| format!("file-{i}.txt")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let crowded = zip_of(&entries);
        let err = decode(&b64(&crowded), None, LIMIT).unwrap_err().to_string();
        assert!(err.contains("1001 entries"), "{err}");
        let some = zip_of(&entries[..50]);
        let err = decode(&b64(&some), None, LIMIT).unwrap_err().to_string();
        assert!(err.contains("file-9.txt, and 40 more"), "{err}");
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn oversized_entries_are_refused() {
        let mut big = b"\0asm\x01\0\0\0".to_vec();
        big.resize(LIMIT + 10, 0);
        let zipped = zip_of(&[("big.wasm", &big)]);
        assert!(matches!(
            decode(&b64(&zipped), None, LIMIT),
            Err(CodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn text_is_webassembly_text_or_a_clear_refusal() {
        let module = r#";; a comment first
            (module (func (export "main")))"#;
        for binary in [Some(false), Some(true), None] {
            assert!(
                matches!(
                    decode(module, binary, LIMIT),
                    Ok(ModuleCode::Portable { .. })
                ),
                "{binary:?}"
            );
        }
        let broken = decode(
            "(module (func (export \"main\") (i32.bogus)))",
            Some(false),
            LIMIT,
        )
        .unwrap_err()
        .to_string();
        assert!(
            broken.starts_with("the WebAssembly text does not compile"),
            "{broken}"
        );
        // What wsk sends for a bare .wasm: the file as a string, its non-UTF-8 bytes replaced.
        let mangled = "\0asm\u{1}\0\0\0\u{1}\u{FFFD}\u{FFFD}`\0\u{1}";
        for binary in [Some(false), None] {
            let err = decode(mangled, binary, LIMIT).unwrap_err();
            assert!(matches!(err, CodeError::BinarySentAsText), "{err}");
            assert!(err.to_string().contains("zip NAME.zip NAME.wasm"), "{err}");
        }
        let script = decode("function main(a) { return a }", Some(false), LIMIT).unwrap_err();
        assert!(matches!(script, CodeError::NotWebAssemblyText), "{script}");
        let mut huge = String::from("(module");
        huge.push_str(&" ".repeat(LIMIT));
        huge.push(')');
        assert!(matches!(
            decode(&huge, Some(false), LIMIT),
            Err(CodeError::TooLarge { .. })
        ));
    }
}

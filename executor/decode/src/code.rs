//! Turns the `code` of an /init into one module: base64 of a zip holding one module, or of a
//! bare module, or WebAssembly text; the module is portable Wasm or one of our signed
//! artifacts. Everything else is refused with an error that says what was found and what to do.

use std::{io::Read, ops::Range};

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

/// The bytes an /init's code decodes to, and where its module lies in them: a module stored
/// uncompressed in a zip is used where it lies, never copied out.
#[derive(Debug)]
pub struct DecodedCode {
    bytes: Vec<u8>,
    module: Range<usize>,
}

/// The module an /init carries, borrowed from its [`DecodedCode`], before the backend prepares it.
#[derive(Debug)]
pub enum ModuleCode<'a> {
    /// Portable WebAssembly, compiled (or taken from the cache) by the backend.
    Portable { wasm: &'a [u8], sha256: String },
    /// A precompiled artifact whose envelope is still to be verified.
    Precompiled(Envelope<'a>),
}

impl DecodedCode {
    fn whole(bytes: Vec<u8>) -> Self {
        let module = 0..bytes.len();
        DecodedCode { bytes, module }
    }

    /// What the module is: portable Wasm with its hash, or an envelope; anything else is
    /// refused with what it looks like.
    pub fn module(&self) -> Result<ModuleCode<'_>, CodeError> {
        let bytes = &self.bytes[self.module.clone()];
        if bytes.starts_with(WASM_MAGIC) {
            return Ok(ModuleCode::Portable {
                wasm: bytes,
                sha256: wasm_artifact::sha256_hex(bytes),
            });
        }
        if Envelope::is_envelope(bytes) {
            return Ok(ModuleCode::Precompiled(Envelope::parse(bytes)?));
        }
        Err(CodeError::NotAModule(describe_foreign(bytes)))
    }
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
) -> Result<DecodedCode, CodeError> {
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
    if bytes.starts_with(ZIP_MAGIC) || bytes.starts_with(EMPTY_ZIP_MAGIC) {
        single_module_from_zip(bytes, max_module_bytes)
    } else {
        Ok(DecodedCode::whole(bytes))
    }
}

/// Base64 as sent, decoded with SIMD straight from the request's text. Anything else (text
/// with line breaks in it, as `base64` and MIME encoders wrap it, or not base64 at all) is left
/// to the scalar decoder, on a copy without whitespace; it also says where the text went wrong.
pub(crate) fn decode_base64(code: &str) -> Result<Vec<u8>, CodeError> {
    if let Ok(bytes) = base64_simd::STANDARD.decode_to_vec(code) {
        return Ok(bytes);
    }
    let compact: Vec<u8> = code.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(&compact)
        .map_err(CodeError::Base64)
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

fn compile_text(text: &str, max_module_bytes: usize) -> Result<DecodedCode, CodeError> {
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
    Ok(DecodedCode::whole(wasm))
}

/// Names what a non-module file looks like, so the user learns what went wrong.
fn describe_foreign(bytes: &[u8]) -> String {
    if bytes.starts_with(ELF_MAGIC) {
        "the code is a bare native artifact (ELF) without our signed envelope; precompile it with `wasm-precompile compile --runtime RUNTIME -- IN.wasm --sign-key KEY --zip -o OUT.zip` or upload portable Wasm".into()
    } else if bytes.starts_with(WASMER_ARTIFACT_MAGIC) {
        "the code is a bare wasmer artifact without our signed envelope; precompile it with `wasm-precompile compile --runtime wasmer -- IN.wasm --sign-key KEY --zip -o OUT.zip`".into()
    } else if bytes.starts_with(WAMR_AOT_MAGIC) {
        "the code is a bare WAMR AOT file without our envelope; precompile it with `wasm-precompile compile --runtime wamr -- IN.wasm --sign-key KEY --zip -o OUT.zip`".into()
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

fn single_module_from_zip(
    bytes: Vec<u8>,
    max_module_bytes: usize,
) -> Result<DecodedCode, CodeError> {
    let zip_error = |e: zip::result::ZipError| CodeError::Zip(e.to_string());
    let too_large = || CodeError::TooLarge {
        limit_mb: max_module_bytes >> 20,
    };
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes.as_slice())).map_err(zip_error)?;
    if archive.len() > MAX_ZIP_ENTRIES {
        return Err(CodeError::TooManyEntries(archive.len()));
    }
    let mut modules = Vec::new();
    let mut others = Vec::new();
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(zip_error)?;
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
    let (index, name) = match modules.len() {
        0 => {
            return Err(CodeError::NoModule(if others.is_empty() {
                "an empty archive".into()
            } else {
                names(&others)
            }));
        }
        1 => modules.swap_remove(0),
        count => {
            return Err(CodeError::SeveralModules {
                count,
                names: names(&modules.into_iter().map(|(_, n)| n).collect::<Vec<_>>()),
            });
        }
    };
    let entry = archive.by_index(index).map_err(zip_error)?;
    if let Some(range) = stored_range(&entry, bytes.len()) {
        if range.len() > max_module_bytes {
            return Err(too_large());
        }
        // Anything amiss (a checksum that does not match) is left to the reader below, which
        // says what.
        if crc32fast::hash(&bytes[range.clone()]) == entry.crc32() {
            drop(entry);
            drop(archive);
            return Ok(DecodedCode {
                bytes,
                module: range,
            });
        }
    }
    let mut out = Vec::with_capacity((entry.size() as usize).min(max_module_bytes));
    // Read one byte past the limit so an oversized (or zip-bomb) entry is detected.
    entry
        .take(max_module_bytes as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| CodeError::Zip(format!("{name}: {e}")))?;
    if out.len() > max_module_bytes {
        return Err(too_large());
    }
    Ok(DecodedCode::whole(out))
}

/// Where an entry stored without compression (as `wasm-precompile` packs artifacts) lies in
/// the archive's bytes, when it lies wholly inside them.
pub(crate) fn stored_range<R: Read>(
    entry: &zip::read::ZipFile<'_, R>,
    archive_len: usize,
) -> Option<Range<usize>> {
    if entry.compression() != zip::CompressionMethod::Stored
        || entry.encrypted()
        || entry.size() != entry.compressed_size()
    {
        return None;
    }
    let start = usize::try_from(entry.data_start()).ok()?;
    let end = start.checked_add(usize::try_from(entry.size()).ok()?)?;
    (end <= archive_len).then_some(start..end)
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
        zip_with(entries, zip::CompressionMethod::Deflated)
    }

    fn zip_with(entries: &[(&str, &[u8])], method: zip::CompressionMethod) -> Vec<u8> {
        use std::io::Write;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, data) in entries {
            let options = zip::write::SimpleFileOptions::default().compression_method(method);
            w.start_file(*name, options).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    /// What /init finds in the code, owned.
    #[derive(Debug)]
    enum Found {
        Portable(Vec<u8>),
        Precompiled,
    }

    fn decode_module(code: &str, binary: Option<bool>, limit: usize) -> Result<Found, CodeError> {
        Ok(match decode(code, binary, limit)?.module()? {
            ModuleCode::Portable { wasm, .. } => Found::Portable(wasm.to_vec()),
            ModuleCode::Precompiled(_) => Found::Precompiled,
        })
    }

    #[test]
    fn a_stored_entry_is_used_where_it_lies_and_checked() {
        let wasm = b"\0asm\x01\0\0\0\x00\x01\x02";
        let stored = zip_with(
            &[("README", b"hi"), ("action.wasm", wasm)],
            zip::CompressionMethod::Stored,
        );
        let decoded = decode(&b64(&stored), None, LIMIT).unwrap();
        assert_eq!(
            decoded.bytes, stored,
            "the archive's bytes, not a copy of the entry"
        );
        assert!(matches!(decoded.module(), Ok(ModuleCode::Portable { wasm: w, .. }) if w == wasm));
        // A flipped byte in the entry: the checksum refuses it, as it does for a deflated one.
        let at = stored.windows(wasm.len()).position(|w| w == wasm).unwrap();
        let mut corrupt = stored.clone();
        corrupt[at + wasm.len() - 1] ^= 0xff;
        let error = decode(&b64(&corrupt), None, LIMIT).unwrap_err();
        assert!(matches!(error, CodeError::Zip(_)), "{error}");
        let deflated = zip_of(&[("action.wasm", wasm)]);
        assert!(matches!(
            decode_module(&b64(&deflated), None, LIMIT),
            Ok(Found::Portable(w)) if w == wasm
        ));
        let mut big = b"\0asm\x01\0\0\0".to_vec();
        big.resize(LIMIT + 10, 0);
        let stored_big = zip_with(&[("big.wasm", &big)], zip::CompressionMethod::Stored);
        assert!(matches!(
            decode(&b64(&stored_big), None, LIMIT),
            Err(CodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn bare_and_zipped_modules_decode_module() {
        let wasm = b"\0asm\x01\0\0\0";
        assert!(matches!(
            decode_module(&b64(wasm), None, LIMIT),
            Ok(Found::Portable(_))
        ));
        let zipped = zip_of(&[("README", b"hi"), ("action.wasm", wasm)]);
        assert!(matches!(
            decode_module(&b64(&zipped), None, LIMIT),
            Ok(Found::Portable(_))
        ));
        // base64 split over lines, as some tools write it
        let wrapped = b64(wasm)
            .chars()
            .map(|c| format!("{c}\n"))
            .collect::<String>();
        assert!(matches!(
            decode_module(&wrapped, None, LIMIT),
            Ok(Found::Portable(_))
        ));
    }

    #[test]
    fn bad_code_is_refused_with_a_reason() {
        assert!(matches!(
            decode_module("not base64!!", None, LIMIT),
            Err(CodeError::Base64(_))
        ));
        assert!(matches!(
            decode_module("", None, LIMIT),
            Err(CodeError::Empty)
        ));
        assert!(matches!(
            decode_module(&b64(b"PK\x03\x04garbage"), None, LIMIT),
            Err(CodeError::Zip(_))
        ));
        let two = zip_of(&[
            ("a.wasm", b"\0asm\x01\0\0\0"),
            ("b.wasm", b"\0asm\x01\0\0\0"),
        ]);
        assert!(matches!(
            decode_module(&b64(&two), None, LIMIT),
            Err(CodeError::SeveralModules { count: 2, .. })
        ));
        let none = zip_of(&[("main.py", b"print(1)")]);
        let err = decode_module(&b64(&none), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(err.contains("main.py"), "{err}");
        let elf = decode_module(&b64(b"\x7fELF\x02\x01\x01"), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(elf.contains("ELF"), "{elf}");
        let wasmer = decode_module(&b64(b"wasmer-universal\0\0\0\0"), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(wasmer.contains("bare wasmer artifact"), "{wasmer}");
        let text = decode_module(&b64(b"hello world"), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(text.contains("not a WebAssembly module"), "{text}");
    }

    #[test]
    fn crowded_archives_get_short_answers() {
        let names: Vec<String> = (0..1001).map(|i| format!("file-{i}.txt")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let crowded = zip_of(&entries);
        let err = decode_module(&b64(&crowded), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(err.contains("1001 entries"), "{err}");
        let some = zip_of(&entries[..50]);
        let err = decode_module(&b64(&some), None, LIMIT)
            .unwrap_err()
            .to_string();
        assert!(err.contains("file-9.txt, and 40 more"), "{err}");
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn oversized_entries_are_refused() {
        let mut big = b"\0asm\x01\0\0\0".to_vec();
        big.resize(LIMIT + 10, 0);
        let zipped = zip_of(&[("big.wasm", &big)]);
        assert!(matches!(
            decode_module(&b64(&zipped), None, LIMIT),
            Err(CodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn text_is_webassembly_text_or_a_clear_refusal() {
        let module = r#";; a comment first
            (module (func (export "main")))"#;
        for binary in [Some(false), Some(true), None] {
            assert!(
                matches!(decode_module(module, binary, LIMIT), Ok(Found::Portable(_))),
                "{binary:?}"
            );
        }
        let broken = decode_module(
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
            let err = decode_module(mangled, binary, LIMIT).unwrap_err();
            assert!(matches!(err, CodeError::BinarySentAsText), "{err}");
            assert!(err.to_string().contains("zip NAME.zip NAME.wasm"), "{err}");
        }
        let script =
            decode_module("function main(a) { return a }", Some(false), LIMIT).unwrap_err();
        assert!(matches!(script, CodeError::NotWebAssemblyText), "{script}");
        let mut huge = String::from("(module");
        huge.push_str(&" ".repeat(LIMIT));
        huge.push(')');
        assert!(matches!(
            decode_module(&huge, Some(false), LIMIT),
            Err(CodeError::TooLarge { .. })
        ));
    }
}

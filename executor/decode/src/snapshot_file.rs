//! The file form of an action's engine state (what `wasm-precompile snapshot` makes ahead of
//! time, and what the executor keeps of the snapshots it takes at /init): a header that names
//! the language, the engine the state was taken on, the action's `main` and what its top level
//! printed, then the snapshot's memory writes. It holds no code, so no signature is needed to
//! run it: the engine's own code runs on it in the sandbox, as on any state an action reaches.
//! Everything is checked before use: here its shape, by the executor its fit to the engine.
//!
//! Layout: [`MAGIC`], the header's length (u32, little endian) and the header (JSON), then the
//! writes, packed as one LZ4 block (decompressed at memory speed; a zip around the file stores
//! it as it is): their unpacked and packed lengths (u64 each) and the packed bytes, nothing
//! after. Unpacked: the number of writes (u32), then each write as offset (u64), length (u32,
//! not zero) and bytes, in ascending order without overlaps, all within the snapshot's memory.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::snapshot::{GlobalValue, PAGE_BYTES, Snapshot};

/// First bytes of every state file (a NUL first: it can be neither text nor a zip; the last
/// character is the format's version).
pub const MAGIC: &[u8; 8] = b"\0OWSTAT1";
/// Most bytes of header (the top level's output is kept up to 1 MiB, escaped in JSON).
const MAX_HEADER_BYTES: usize = 8 << 20;
/// A Wasm32 memory's most pages.
const MAX_PAGES: u64 = 1 << 16;
/// The writes' framing (count, offsets, lengths) beyond their bytes, bounded by the smallest
/// write worth framing: a state file's unpacked writes are at most this many times its memory.
const MAX_UNPACKED_PER_MEMORY_BYTE: u64 = 2;

/// What a state file says besides the memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Header {
    language: String,
    engine_sha256: String,
    main: String,
    memory_pages: u64,
    globals: Vec<(String, GlobalValue)>,
    #[serde(default)]
    output: Vec<PrintedLine>,
    #[serde(default)]
    made_by: String,
}

/// A line the action's top level printed while the state was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrintedLine {
    pub stderr: bool,
    pub text: String,
}

/// An action's engine state with what identifies it.
#[derive(Debug, PartialEq)]
pub struct StateFile {
    /// The language's name as the executor writes it (`JavaScript`, `Python`).
    pub language: String,
    /// SHA-256 (lower-case hex) of the engine file the state was taken on.
    pub engine_sha256: String,
    /// The function the state's engine calls for each activation.
    pub main: String,
    pub output: Vec<PrintedLine>,
    /// What wrote the file, for people reading it (`wasm-precompile 0.1.0`, `wasm-executor …`).
    pub made_by: String,
    pub snapshot: Snapshot,
}

#[derive(Debug, Error, PartialEq)]
pub enum StateFileError {
    #[error("not a state file (it does not start with the state magic)")]
    NotState,
    #[error("the state file ends early, in {0}")]
    Truncated(&'static str),
    #[error("the state file's header is not valid: {0}")]
    Header(String),
    #[error("the state file asks for {pages} pages of memory; at most {max} are allowed here")]
    TooManyPages { pages: u64, max: u64 },
    #[error("the state file's writes claim {0} bytes unpacked, more than its memory can hold")]
    TooLargeUnpacked(u64),
    #[error("the state file's writes do not unpack: {0}")]
    Unpack(String),
    #[error(
        "the state file's write at offset {offset} ({len} bytes) overlaps the one before it or lies outside its {pages} pages of memory"
    )]
    WriteOutOfPlace { offset: u64, len: u64, pages: u64 },
    #[error("the state file has {0} bytes after its writes")]
    TrailingBytes(usize),
}

/// Reads the next `n` bytes of `input`, or names what ended early.
fn take<'a>(
    input: &mut &'a [u8],
    n: usize,
    what: &'static str,
) -> Result<&'a [u8], StateFileError> {
    if input.len() < n {
        return Err(StateFileError::Truncated(what));
    }
    let (taken, rest) = input.split_at(n);
    *input = rest;
    Ok(taken)
}

fn take_u32(input: &mut &[u8], what: &'static str) -> Result<u32, StateFileError> {
    let bytes = take(input, 4, what)?;
    Ok(u32::from_le_bytes(bytes.try_into().expect("4 bytes")))
}

fn take_u64(input: &mut &[u8], what: &'static str) -> Result<u64, StateFileError> {
    let bytes = take(input, 8, what)?;
    Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
}

/// Where a state file's writes lie: each one's memory offset and its bytes' range of the
/// buffer the file was unpacked into.
pub type UnpackedWrites = Vec<(usize, std::ops::Range<usize>)>;

impl StateFile {
    /// Reads a state file whose memory may be at most `max_memory_bytes`, checking its shape
    /// (not yet its fit to an engine).
    pub fn parse(bytes: &[u8], max_memory_bytes: u64) -> Result<StateFile, StateFileError> {
        let mut unpacked = Vec::new();
        let (mut file, writes) = StateFile::parse_into(bytes, max_memory_bytes, &mut unpacked)?;
        let unpacked = Bytes::from(unpacked);
        file.snapshot.writes = writes
            .into_iter()
            .map(|(offset, range)| (offset, unpacked.slice(range)))
            .collect();
        Ok(file)
    }

    /// [`StateFile::parse`] with the writes unpacked into `unpacked` (a buffer kept from one
    /// file to the next, so its memory is neither asked for again nor faulted in) instead of
    /// into the snapshot, which has none: they lie where the ranges returned say.
    pub fn parse_into(
        bytes: &[u8],
        max_memory_bytes: u64,
        unpacked: &mut Vec<u8>,
    ) -> Result<(StateFile, UnpackedWrites), StateFileError> {
        let mut input = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or(StateFileError::NotState)?;
        let header_len = take_u32(&mut input, "the header's length")? as usize;
        if header_len > MAX_HEADER_BYTES {
            return Err(StateFileError::Header(format!(
                "{header_len} bytes, more than {MAX_HEADER_BYTES}"
            )));
        }
        let header: Header = serde_json::from_slice(take(&mut input, header_len, "the header")?)
            .map_err(|e| StateFileError::Header(e.to_string()))?;
        let is_hex_sha256 = header.engine_sha256.len() == 64
            && header
                .engine_sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !is_hex_sha256 {
            return Err(StateFileError::Header(
                "engine_sha256 is not a lower-case hex SHA-256".into(),
            ));
        }
        let max_pages = MAX_PAGES.min(max_memory_bytes / PAGE_BYTES as u64);
        if header.memory_pages > max_pages {
            return Err(StateFileError::TooManyPages {
                pages: header.memory_pages,
                max: max_pages,
            });
        }
        let memory_bytes = header.memory_pages * PAGE_BYTES as u64;
        let unpacked_len = take_u64(&mut input, "the writes' unpacked length")?;
        let packed_len = take_u64(&mut input, "the writes' packed length")?;
        if unpacked_len > MAX_UNPACKED_PER_MEMORY_BYTE * memory_bytes + 4 {
            return Err(StateFileError::TooLargeUnpacked(unpacked_len));
        }
        let packed = take(
            &mut input,
            usize::try_from(packed_len).unwrap_or(usize::MAX),
            "the packed writes",
        )?;
        if !input.is_empty() {
            return Err(StateFileError::TrailingBytes(input.len()));
        }
        // Every byte is written by the unpacking (checked below): a kept buffer's old bytes
        // need no zeroing, only its growth does.
        let unpacked_len = unpacked_len as usize;
        if unpacked.len() < unpacked_len {
            unpacked.resize(unpacked_len, 0);
        } else {
            unpacked.truncate(unpacked_len);
        }
        let filled = lz4_flex::block::decompress_into(packed, unpacked)
            .map_err(|e| StateFileError::Unpack(e.to_string()))?;
        if filled != unpacked.len() {
            return Err(StateFileError::Unpack(format!(
                "{filled} bytes, not the {unpacked_len} announced"
            )));
        }
        let writes = parse_writes(unpacked, header.memory_pages)?;
        let file = StateFile {
            language: header.language,
            engine_sha256: header.engine_sha256,
            main: header.main,
            output: header.output,
            made_by: header.made_by,
            snapshot: Snapshot {
                globals: header.globals,
                memory_pages: header.memory_pages,
                writes: Vec::new(),
            },
        };
        Ok((file, writes))
    }

    /// The file's bytes.
    /// The file, its writes packed by LZ4's fast compressor.
    pub fn to_bytes(&self) -> Vec<u8> {
        let Ok(bytes) = self.to_bytes_packed_by(|unpacked| {
            Ok::<_, std::convert::Infallible>(lz4_flex::block::compress(unpacked))
        });
        bytes
    }

    /// The file, its writes packed by `pack` into an LZ4 block (any LZ4 compressor's: a
    /// slower one packs smaller, and every reader unpacks the block as fast).
    pub fn to_bytes_packed_by<E>(
        &self,
        pack: impl FnOnce(&[u8]) -> Result<Vec<u8>, E>,
    ) -> Result<Vec<u8>, E> {
        let header = Header {
            language: self.language.clone(),
            engine_sha256: self.engine_sha256.clone(),
            main: self.main.clone(),
            memory_pages: self.snapshot.memory_pages,
            globals: self.snapshot.globals.clone(),
            output: self.output.clone(),
            made_by: self.made_by.clone(),
        };
        let header = serde_json::to_vec(&header).expect("the header serializes");
        let writes = &self.snapshot.writes;
        let mut unpacked =
            Vec::with_capacity(4 + writes.len() * 12 + self.snapshot.written_bytes());
        unpacked.extend_from_slice(&(writes.len() as u32).to_le_bytes());
        for (offset, data) in writes {
            unpacked.extend_from_slice(&(*offset as u64).to_le_bytes());
            unpacked.extend_from_slice(&(data.len() as u32).to_le_bytes());
            unpacked.extend_from_slice(data);
        }
        let packed = pack(&unpacked)?;
        let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + header.len() + 16 + packed.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&header);
        bytes.extend_from_slice(&(unpacked.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&(packed.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&packed);
        Ok(bytes)
    }
}

/// The unpacked writes, each in place within `memory_pages` pages (slices of `unpacked`, not
/// copies).
fn parse_writes(unpacked: &[u8], memory_pages: u64) -> Result<UnpackedWrites, StateFileError> {
    let mut input = unpacked;
    let memory_bytes = memory_pages * PAGE_BYTES as u64;
    let count = take_u32(&mut input, "the number of writes")? as usize;
    // Each write takes at least 13 bytes: a count beyond that is a lie, not an allocation.
    let mut writes = Vec::with_capacity(count.min(input.len() / 13));
    let mut end_of_last = 0u64;
    for _ in 0..count {
        let offset = take_u64(&mut input, "a write's offset")?;
        let len = u64::from(take_u32(&mut input, "a write's length")?);
        let in_place = len > 0
            && offset >= end_of_last
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= memory_bytes);
        if !in_place {
            return Err(StateFileError::WriteOutOfPlace {
                offset,
                len,
                pages: memory_pages,
            });
        }
        let start = unpacked.len() - input.len();
        take(&mut input, len as usize, "a write's bytes")?;
        end_of_last = offset + len;
        writes.push((offset as usize, start..start + len as usize));
    }
    if !input.is_empty() {
        return Err(StateFileError::TrailingBytes(input.len()));
    }
    Ok(writes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> StateFile {
        StateFile {
            language: "JavaScript".into(),
            engine_sha256: "ab".repeat(32),
            main: "main".into(),
            output: vec![PrintedLine {
                stderr: false,
                text: "loaded".into(),
            }],
            made_by: "test".into(),
            snapshot: Snapshot {
                globals: vec![("__stack_pointer".into(), GlobalValue::I32(4096))],
                memory_pages: 2,
                writes: vec![
                    (16, Bytes::from_static(b"abc")),
                    (PAGE_BYTES, Bytes::from(vec![7u8; 300])),
                ],
            },
        }
    }

    #[test]
    fn a_state_survives_its_file_form() {
        let bytes = state().to_bytes();
        assert!(bytes.starts_with(MAGIC));
        assert_eq!(StateFile::parse(&bytes, 1 << 30).unwrap(), state());
    }

    #[test]
    fn a_buffer_kept_from_a_larger_file_unpacks_the_next_one_alike() {
        let mut unpacked = vec![0xEE; 1 << 20];
        let (file, writes) =
            StateFile::parse_into(&state().to_bytes(), 1 << 30, &mut unpacked).unwrap();
        let want = state();
        assert!(file.snapshot.writes.is_empty());
        assert_eq!((&file.main, &file.output), (&want.main, &want.output));
        let got: Vec<(usize, &[u8])> = writes
            .iter()
            .map(|(offset, range)| (*offset, &unpacked[range.clone()]))
            .collect();
        let expected: Vec<(usize, &[u8])> = want
            .snapshot
            .writes
            .iter()
            .map(|(offset, bytes)| (*offset, &bytes[..]))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn every_cut_and_every_misplaced_write_is_an_error_not_a_panic() {
        let bytes = state().to_bytes();
        for end in 0..bytes.len() {
            assert!(
                StateFile::parse(&bytes[..end], 1 << 30).is_err(),
                "cut at {end}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            StateFile::parse(&longer, 1 << 30),
            Err(StateFileError::TrailingBytes(1))
        );
        let mut outside = state();
        outside
            .snapshot
            .writes
            .push((2 * PAGE_BYTES - 1, Bytes::from_static(b"xy")));
        assert!(matches!(
            StateFile::parse(&outside.to_bytes(), 1 << 30),
            Err(StateFileError::WriteOutOfPlace { .. })
        ));
        let mut overlapping = state();
        overlapping
            .snapshot
            .writes
            .insert(1, (17, Bytes::from_static(b"z")));
        assert!(matches!(
            StateFile::parse(&overlapping.to_bytes(), 1 << 30),
            Err(StateFileError::WriteOutOfPlace { .. })
        ));
        assert_eq!(
            StateFile::parse(&bytes, PAGE_BYTES as u64),
            Err(StateFileError::TooManyPages { pages: 2, max: 1 })
        );
        let mut empty_write = state();
        empty_write
            .snapshot
            .writes
            .push((3 * PAGE_BYTES / 2, Bytes::from_static(b"")));
        assert!(matches!(
            StateFile::parse(&empty_write.to_bytes(), 1 << 30),
            Err(StateFileError::WriteOutOfPlace { .. })
        ));
    }

    #[test]
    fn lengths_that_lie_allocate_nothing() {
        let bytes = state().to_bytes();
        let header_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
        let lengths_at = 12 + header_len;
        let mut claims_more = bytes.clone();
        claims_more[lengths_at..lengths_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            StateFile::parse(&claims_more, 1 << 30),
            Err(StateFileError::TooLargeUnpacked(u64::MAX))
        );
        let mut packed_more = bytes.clone();
        packed_more[lengths_at + 8..lengths_at + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            StateFile::parse(&packed_more, 1 << 30),
            Err(StateFileError::Truncated(_))
        ));
        let mut garbled = bytes.clone();
        let last = garbled.len() - 1;
        garbled[lengths_at + 16..last].fill(0xff);
        assert!(StateFile::parse(&garbled, 1 << 30).is_err());
    }
}

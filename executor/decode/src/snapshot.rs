//! Instance snapshots: the state a pre-initialised instance reached (its mutable globals and
//! its memory), kept as the difference from a fresh instance of the same module and written
//! back into every new instance before its entry point runs, so the compiled module is shared
//! and only the action's state is per action.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// The value of a mutable global, as every backend reads and writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GlobalValue {
    I32(i32),
    I64(i64),
    /// The bits of an `f32`.
    F32(u32),
    /// The bits of an `f64`.
    F64(u64),
}

impl GlobalValue {
    /// Whether `other` is a value of the same type.
    pub fn same_type(&self, other: &GlobalValue) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// An instance's state as a backend reads it: its exported mutable globals by export name and
/// the contents of its exported memory `memory`.
#[derive(Debug, Default)]
pub struct InstanceImage {
    pub globals: Vec<(String, GlobalValue)>,
    pub memory: Vec<u8>,
}

/// Bytes written into memory at an offset (a slice of a buffer that may hold other writes).
pub type MemoryWrite = (usize, Bytes);

/// What a pre-initialised instance has that a fresh one has not.
#[derive(Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Every exported mutable global whose value changed.
    pub globals: Vec<(String, GlobalValue)>,
    /// The memory's size, in 64 KiB pages.
    pub memory_pages: u64,
    /// Byte ranges of memory that differ from a fresh instance's.
    pub writes: Vec<MemoryWrite>,
}

/// Memory is compared in blocks of this many bytes; runs of changed blocks closer than
/// [`MERGE_GAP`] become one write.
const BLOCK: usize = 256;
const MERGE_GAP: usize = 4 * BLOCK;
pub const PAGE_BYTES: usize = 64 << 10;

impl Snapshot {
    /// The difference between a fresh instance (`fresh`) and the same module's instance after
    /// its initialisation (`initialised`).
    pub fn between(fresh: &InstanceImage, initialised: &InstanceImage) -> Snapshot {
        let globals = initialised
            .globals
            .iter()
            .filter(|(name, value)| !fresh.globals.iter().any(|(n, v)| n == name && v == value))
            .cloned()
            .collect();
        let after = &initialised.memory;
        let before = |range: std::ops::Range<usize>| -> &[u8] {
            let start = range.start.min(fresh.memory.len());
            let end = range.end.min(fresh.memory.len());
            &fresh.memory[start..end]
        };
        let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
        for start in (0..after.len()).step_by(BLOCK) {
            let end = (start + BLOCK).min(after.len());
            let old = before(start..end);
            let changed = if old.len() == end - start {
                old != &after[start..end]
            } else {
                // Beyond the fresh memory (grown): zero unless written.
                after[start..end].iter().any(|&b| b != 0)
            };
            if !changed {
                continue;
            }
            match ranges.last_mut() {
                Some(last) if start - last.end <= MERGE_GAP => last.end = end,
                _ => ranges.push(start..end),
            }
        }
        Snapshot {
            globals,
            memory_pages: after.len().div_ceil(PAGE_BYTES) as u64,
            writes: ranges
                .into_iter()
                .map(|r| (r.start, Bytes::copy_from_slice(&after[r])))
                .collect(),
        }
    }

    /// Bytes of memory written into every instance.
    pub fn written_bytes(&self) -> usize {
        self.writes.iter().map(|(_, bytes)| bytes.len()).sum()
    }

    /// Writes the snapshot's memory into `memory`, which has at least
    /// [`Snapshot::memory_pages`] pages (an error names what does not fit otherwise).
    pub fn write_memory(&self, memory: &mut [u8]) -> Result<(), String> {
        for (offset, bytes) in &self.writes {
            let target = memory
                .get_mut(*offset..offset + bytes.len())
                .ok_or_else(|| format!("the snapshot does not fit the memory at {offset}"))?;
            target.copy_from_slice(bytes);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(memory: Vec<u8>, globals: &[(&str, GlobalValue)]) -> InstanceImage {
        InstanceImage {
            globals: globals.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            memory,
        }
    }

    #[test]
    fn only_what_changed_is_kept_and_writing_it_back_restores_the_state() {
        let fresh = image(
            vec![7; PAGE_BYTES],
            &[("sp", GlobalValue::I32(1024)), ("x", GlobalValue::I64(3))],
        );
        let mut after = vec![7; 3 * PAGE_BYTES];
        after[10] = 1;
        after[PAGE_BYTES + 5] = 0; // zero in a grown page: nothing to write
        after[2 * PAGE_BYTES + 9] = 42;
        after[PAGE_BYTES..2 * PAGE_BYTES].fill(0);
        after[2 * PAGE_BYTES..].fill(0);
        after[2 * PAGE_BYTES + 9] = 42;
        let initialised = image(
            after.clone(),
            &[("sp", GlobalValue::I32(512)), ("x", GlobalValue::I64(3))],
        );
        let snapshot = Snapshot::between(&fresh, &initialised);
        assert_eq!(
            snapshot.globals,
            vec![("sp".to_string(), GlobalValue::I32(512))]
        );
        assert_eq!(snapshot.memory_pages, 3);
        assert_eq!(
            snapshot.writes.len(),
            2,
            "the changed block and the written grown block"
        );
        assert!(snapshot.written_bytes() <= 2 * BLOCK);

        let mut restored = vec![7; PAGE_BYTES];
        restored.resize(3 * PAGE_BYTES, 0);
        snapshot.write_memory(&mut restored).unwrap();
        assert_eq!(restored, after);
    }

    #[test]
    fn a_memory_too_small_for_the_snapshot_is_an_error_not_a_panic() {
        let snapshot = Snapshot::between(&image(vec![], &[]), &image(vec![1; 300], &[]));
        assert!(snapshot.write_memory(&mut [0; 100]).is_err());
    }
}

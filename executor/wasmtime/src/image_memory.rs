//! The linear memories of language-engine instances on wasmtime: the engine that runs language
//! engines creates every memory as a [`KeptMemory`] (wasmtime's `MemoryCreator`), into which an
//! action's memory image is mapped copy-on-write, reset and kept when the instance ends.

use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

use wasm_executor::backend::kept_memory::KeptMemory;

/// What a memory reserves when wasmtime leaves it to the creator: all a 32-bit index reaches,
/// so that growing never moves it.
const DEFAULT_RESERVATION: usize = 4 << 30;

/// Creates every linear memory of the engine it is configured on.
pub struct ImageMemories;

// SAFETY: each memory is a private anonymous mapping of its reservation and guard, zero filled
// or reset to the image it holds, accessible exactly up to its size, never moved, used by one
// instance at a time.
unsafe impl MemoryCreator for ImageMemories {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>,
        guard_size_in_bytes: usize,
    ) -> Result<Box<dyn LinearMemory>, String> {
        let reservation = reserved_size_in_bytes.unwrap_or_else(|| {
            maximum
                .unwrap_or(DEFAULT_RESERVATION)
                .max(DEFAULT_RESERVATION)
        });
        let mapped = reservation
            .checked_add(guard_size_in_bytes)
            .ok_or("the memory's reservation overflows")?;
        Ok(Box::new(ImageMemory(KeptMemory::take(
            reservation,
            mapped,
            minimum,
        )?)))
    }
}

/// A kept memory as wasmtime sees one.
struct ImageMemory(KeptMemory);

// SAFETY: the pointer stays valid and unmoved for the memory's life; `byte_size` bytes of it
// are accessible, and growth up to `byte_capacity` keeps the base.
unsafe impl LinearMemory for ImageMemory {
    fn byte_size(&self) -> usize {
        self.0.size()
    }

    fn byte_capacity(&self) -> usize {
        self.0.reservation()
    }

    fn grow_to(&mut self, new_size: usize) -> wasmtime::Result<()> {
        self.0
            .resize(new_size)
            .map_err(|e| wasmtime::format_err!(e))
    }

    fn as_ptr(&self) -> *mut u8 {
        self.0.base().as_ptr()
    }
}

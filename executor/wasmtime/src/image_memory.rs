//! The linear memories of language-engine instances: reservations this backend makes and owns
//! (wasmtime's `MemoryCreator`, on the engine that runs language engines), into which an
//! action's memory image is mapped copy-on-write. An ended instance's memory is reset to the
//! image it held (the pages the instance changed, copied back or given to the kernel) and kept
//! for the next instance, which finds the image in place when it is the same action's; a memory
//! that cannot be reset is unmapped, so no page of one instance reaches another.

use std::{
    collections::BTreeMap,
    ptr::NonNull,
    sync::{Mutex, PoisonError},
};

use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};
use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

use wasm_executor::backend::memory_image::MemoryImage;

/// What a memory reserves when wasmtime leaves it to the creator: all a 32-bit index reaches,
/// so that growing never moves it.
const DEFAULT_RESERVATION: usize = 4 << 30;
/// Ended instances' memories kept for the next ones.
const KEPT_MEMORIES: usize = 16;
/// Bytes of an ended instance's changed pages copied back from its image, per memory; further
/// changed pages go back to the kernel.
const KEEP_RESIDENT_BYTES: usize = 1 << 20;

/// What a memory's pages hold besides what its instance changed.
#[derive(Debug)]
enum Holds {
    Zeros,
    Image(MemoryImage),
    /// A mapping failed half-way: never reused.
    Unknown,
}

impl Holds {
    /// What a kept memory holding this is worth to an instance that wants `wanted`.
    fn worth(&self, wanted: Option<&MemoryImage>) -> Worth {
        match self {
            Holds::Image(held) if wanted.is_some_and(|wanted| held.same(wanted)) => Worth::Wanted,
            // An image only this memory holds belongs to no live action any more: nobody can
            // ask for it again ([`MemoryImage::same`] is identity, not likeness).
            Holds::Image(held) if held.held_elsewhere() => Worth::Other,
            Holds::Image(_) | Holds::Zeros => Worth::Nothing,
            Holds::Unknown => Worth::Other,
        }
    }
}

/// What a kept memory is worth to the instance about to get one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Worth {
    /// It holds the image the instance wants: no mapping to make.
    Wanted,
    /// It holds another image, of an action that may run again.
    Other,
    /// It holds zeros, or an image no action holds any more.
    Nothing,
}

/// The kept memory (by position, the least recently ended first; `None` where one does not
/// fit) a new instance takes, or `None` for a new memory: the one holding its image; else,
/// while there is `room` for more memories, a new one, so that the kept ones go on holding the
/// images of the actions running now; else one worth nothing to anybody, else the least
/// recently ended.
fn choose(kept: &[Option<Worth>], room: bool) -> Option<usize> {
    let wanted = kept.iter().rposition(|w| *w == Some(Worth::Wanted));
    if wanted.is_some() || room {
        return wanted;
    }
    kept.iter()
        .position(|w| *w == Some(Worth::Nothing))
        .or_else(|| kept.iter().position(Option::is_some))
}

/// The memories in use, by base address, with what they hold.
static LIVE: Mutex<BTreeMap<usize, Holds>> = Mutex::new(BTreeMap::new());
/// Ended instances' memories, reset, the most recently ended last, for new instances as
/// [`choose`] picks them.
static KEPT: Mutex<Vec<Reservation>> = Mutex::new(Vec::new());

thread_local! {
    /// The image the next memory created on this thread is for, when known: a kept memory
    /// that holds it already is preferred, as its pages are mapped and resident.
    static WANTED: std::cell::RefCell<Option<MemoryImage>> = const { std::cell::RefCell::new(None) };
}

/// Says which image (none: unknown) the next instance instantiated on this thread will be
/// given. Only a preference: whatever memory it gets, [`install`] puts the image in it.
pub fn prefer(image: Option<&MemoryImage>) {
    WANTED.with(|wanted| *wanted.borrow_mut() = image.cloned());
}

/// Puts `image` in the memory at `base` (`len` bytes accessible) when [`ImageMemories`] made
/// it: nothing to do when it holds that image already (its last instance was the same
/// action's), else mapped. `None` when the memory is not one of these.
pub fn install(base: NonNull<u8>, len: usize, image: &MemoryImage) -> Option<std::io::Result<()>> {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    let holds = live.get_mut(&(base.as_ptr() as usize))?;
    let before = std::mem::replace(holds, Holds::Unknown);
    if let Holds::Image(held) = &before
        && held.same(image)
    {
        *holds = before;
        return Some(Ok(()));
    }
    // SAFETY: a memory of `ImageMemories` is a private mapping of its own reservation that only
    // the calling instance uses, reset or unmapped when it ends; no guest code runs meanwhile.
    let mapped = unsafe {
        match &before {
            Holds::Image(held) => held.unmap_from(base, len),
            _ => Ok(()),
        }
        .and_then(|()| image.map_into(base, len))
    };
    if mapped.is_ok() {
        *holds = Holds::Image(image.clone());
    }
    Some(mapped)
}

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
        if minimum > reservation {
            return Err(format!(
                "a memory of {minimum} bytes does not fit its reservation of {reservation}"
            ));
        }
        let mapped = reservation
            .checked_add(guard_size_in_bytes)
            .ok_or("the memory's reservation overflows")?;
        let kept = WANTED.with(|wanted| {
            let wanted = wanted.borrow();
            let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
            let worths: Vec<Option<Worth>> = kept
                .iter()
                .map(|r| {
                    (r.memory.reservation == reservation && r.memory.mapped == mapped)
                        .then(|| r.holds.worth(wanted.as_ref()))
                })
                .collect();
            let room = wanted.is_some() && kept.len() < KEPT_MEMORIES;
            choose(&worths, room).map(|at| kept.remove(at))
        });
        let (mut memory, holds) = match kept {
            Some(reservation) => reservation.into_memory(),
            None => (ImageMemory::reserve(reservation, mapped)?, Holds::Zeros),
        };
        memory.resize(minimum)?;
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(memory.base.as_ptr() as usize, holds);
        Ok(Box::new(memory))
    }
}

/// A linear memory: `size` bytes readable and writable, the rest of the reservation and the
/// guard inaccessible.
struct ImageMemory {
    base: NonNull<u8>,
    reservation: usize,
    mapped: usize,
    size: usize,
}

/// An ended instance's memory, reset, with what it holds.
struct Reservation {
    memory: ImageMemory,
    holds: Holds,
}

impl Reservation {
    fn into_memory(self) -> (ImageMemory, Holds) {
        (self.memory, self.holds)
    }
}

// SAFETY: the memory is a plain mapping; wasmtime serialises access to it through its store.
unsafe impl Send for ImageMemory {}
// SAFETY: as above; `&self` methods only read the fields.
unsafe impl Sync for ImageMemory {}

impl ImageMemory {
    fn reserve(reservation: usize, mapped: usize) -> Result<ImageMemory, String> {
        // SAFETY: a new mapping at an address the kernel picks; nothing else refers to it.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                mapped,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .map_err(|e| format!("reserving a linear memory: {e}"))?;
        Ok(ImageMemory {
            base: NonNull::new(base.cast()).ok_or("mmap returned null")?,
            reservation,
            mapped,
            size: 0,
        })
    }

    /// Makes exactly the first `new_size` bytes accessible.
    fn resize(&mut self, new_size: usize) -> Result<(), String> {
        let (from, to, access) = if new_size > self.size {
            (
                self.size,
                new_size,
                MprotectFlags::READ | MprotectFlags::WRITE,
            )
        } else {
            (new_size, self.size, MprotectFlags::empty())
        };
        if to > from {
            // SAFETY: the range lies inside this memory's own reservation.
            unsafe { rustix::mm::mprotect(self.base.as_ptr().add(from).cast(), to - from, access) }
                .map_err(|e| format!("resizing a linear memory: {e}"))?;
        }
        self.size = new_size;
        Ok(())
    }

    /// Resets the memory to what it holds, for another instance: `false` when it cannot be.
    fn reset(&self, holds: &Holds) -> bool {
        let image = match holds {
            Holds::Zeros => &MemoryImage::default(),
            Holds::Image(image) => image,
            Holds::Unknown => return false,
        };
        // SAFETY: the memory's instance has ended; the image was mapped into it (or nothing,
        // for zeros) and only the instance's reads and writes happened since.
        let reset = unsafe { image.reset(self.base, self.size, KEEP_RESIDENT_BYTES) };
        reset
            .inspect_err(|error| tracing::warn!(%error, "a language engine's memory was not reset"))
            .is_ok()
    }
}

// SAFETY: the pointer stays valid and unmoved for the memory's life; `byte_size` bytes of it
// are accessible, and growth up to `byte_capacity` keeps the base.
unsafe impl LinearMemory for ImageMemory {
    fn byte_size(&self) -> usize {
        self.size
    }

    fn byte_capacity(&self) -> usize {
        self.reservation
    }

    fn grow_to(&mut self, new_size: usize) -> wasmtime::Result<()> {
        if new_size > self.reservation {
            wasmtime::bail!("the memory cannot grow beyond its reservation");
        }
        self.resize(new_size).map_err(|e| wasmtime::format_err!(e))
    }

    fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }
}

impl Drop for ImageMemory {
    fn drop(&mut self) {
        let holds = LIVE
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(self.base.as_ptr() as usize));
        if let Some(holds) = holds
            && self.reset(&holds)
        {
            let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() < KEPT_MEMORIES {
                // The mapping moves into the list; this value no longer owns it.
                let memory = ImageMemory { ..*self };
                kept.push(Reservation { memory, holds });
                return;
            }
        }
        // SAFETY: unmaps exactly the mapping `reserve` made, images mapped into it included;
        // the instance that used it is gone.
        if let Err(error) = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.mapped) } {
            tracing::error!(%error, "unmapping a linear memory failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Worth, choose};

    const WANTED: Option<Worth> = Some(Worth::Wanted);
    const OTHER: Option<Worth> = Some(Worth::Other);
    const NOTHING: Option<Worth> = Some(Worth::Nothing);

    #[test]
    fn the_memory_holding_the_wanted_image_is_taken_first() {
        assert_eq!(choose(&[NOTHING, WANTED, OTHER, None], true), Some(1));
        assert_eq!(choose(&[NOTHING, WANTED, OTHER, None], false), Some(1));
    }

    #[test]
    fn while_there_is_room_a_new_memory_is_made_and_every_kept_one_stays() {
        assert_eq!(choose(&[OTHER, None, NOTHING], true), None);
        assert_eq!(choose(&[], true), None);
    }

    #[test]
    fn without_room_a_memory_worth_nothing_goes_before_another_actions() {
        assert_eq!(choose(&[OTHER, None, NOTHING, NOTHING], false), Some(2));
        assert_eq!(choose(&[None, OTHER, OTHER], false), Some(1));
        assert_eq!(choose(&[None], false), None);
    }
}

//! Linear memories that outlive their instances: reservations a backend takes from here
//! (wasmtime's language engines through its `MemoryCreator`, wasmer through its tunables, WAMR
//! through its allocator). A language engine's instance gets one into which its action's memory
//! image is mapped copy-on-write; an ended instance's memory is reset to the image it held (the
//! pages the instance changed, copied back or given to the kernel) and kept for the next
//! instance, which finds the image mapped and its pages resident when it is the same action's:
//! no mapping, no page fault, no unmapping per activation. Any other module's instance gets a
//! zeroed one, reset to zeros when it ends. A memory that cannot be reset is unmapped, so no
//! page of one instance reaches another.

use std::{
    cell::RefCell,
    collections::BTreeMap,
    io,
    ptr::NonNull,
    sync::{Mutex, PoisonError},
};

use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};

use super::memory_image::MemoryImage;

/// Ended instances' memories kept for the next ones, of each of the two lists.
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
static KEPT: Mutex<Vec<(KeptMemory, Holds)>> = Mutex::new(Vec::new());
/// Ended instances' memories that hold zeros, for new instances of any module.
static ZEROED: Mutex<Vec<KeptMemory>> = Mutex::new(Vec::new());

thread_local! {
    /// The image the next memory taken on this thread is for, when known: a kept memory that
    /// holds it already is preferred, as its pages are mapped and resident.
    static WANTED: RefCell<Option<MemoryImage>> = const { RefCell::new(None) };
}

/// Says which image (none: unknown) the next instance instantiated on this thread will be
/// given. Only a preference: whatever memory it gets, [`install`] puts the image in it.
pub fn prefer(image: Option<&MemoryImage>) {
    WANTED.with(|wanted| *wanted.borrow_mut() = image.cloned());
}

/// Whether the next instance instantiated on this thread said which image it will be given
/// ([`prefer`]).
fn image_preferred() -> bool {
    WANTED.with(|wanted| wanted.borrow().is_some())
}

/// Puts `image` in the memory at `base` (`len` bytes accessible) when it is a [`KeptMemory`]:
/// nothing to do when it holds that image already (its last instance was the same action's),
/// else mapped. `None` when the memory is not one of these.
pub fn install(base: NonNull<u8>, len: usize, image: &MemoryImage) -> Option<io::Result<()>> {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    let holds = live.get_mut(&(base.as_ptr() as usize))?;
    let before = std::mem::replace(holds, Holds::Unknown);
    if let Holds::Image(held) = &before
        && held.same(image)
    {
        *holds = before;
        return Some(Ok(()));
    }
    // SAFETY: a kept memory is a private mapping of its own reservation that only the calling
    // instance uses, reset or unmapped when it ends; no guest code runs meanwhile.
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

/// A linear memory: `size` bytes readable and writable, the rest of its `reservation` and the
/// guard up to `mapped` bytes inaccessible; never moved. Dropped, it is reset and kept for
/// another instance, or unmapped.
#[derive(Debug)]
pub struct KeptMemory {
    base: NonNull<u8>,
    reservation: usize,
    mapped: usize,
    size: usize,
}

// SAFETY: the memory is a plain mapping; its runtime serialises the instance's access to it.
unsafe impl Send for KeptMemory {}
// SAFETY: as above; `&self` methods only read the fields.
unsafe impl Sync for KeptMemory {}

impl KeptMemory {
    /// A memory of `minimum` accessible bytes in a reservation of `reservation` bytes and a
    /// guard up to `mapped`: a kept one of that shape as [`choose`] picks it for the image this
    /// thread [`prefer`]s, else a new one. Without a preference, one that holds zeros: a memory
    /// that holds an image is only ever handed to an instance that will be given an image,
    /// which [`install`] then puts in place of the one it held.
    pub fn take(reservation: usize, mapped: usize, minimum: usize) -> Result<KeptMemory, String> {
        if !image_preferred() {
            return KeptMemory::take_zeroed(reservation, mapped, minimum);
        }
        let kept = WANTED.with(|wanted| {
            let wanted = wanted.borrow();
            let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
            let worths: Vec<Option<Worth>> = kept
                .iter()
                .map(|(memory, holds)| {
                    (memory.reservation == reservation && memory.mapped == mapped)
                        .then(|| holds.worth(wanted.as_ref()))
                })
                .collect();
            let room = wanted.is_some() && kept.len() < KEPT_MEMORIES;
            choose(&worths, room).map(|at| kept.remove(at))
        });
        let (memory, holds) = match kept {
            Some(kept) => kept,
            None => (KeptMemory::zeroed(reservation, mapped)?, Holds::Zeros),
        };
        memory.lend(holds, minimum)
    }

    /// A memory of that shape holding zeros (for a module without an image): one an ended
    /// instance left, reset, else a new one.
    fn take_zeroed(
        reservation: usize,
        mapped: usize,
        minimum: usize,
    ) -> Result<KeptMemory, String> {
        KeptMemory::zeroed(reservation, mapped)?.lend(Holds::Zeros, minimum)
    }

    /// A zeroed memory of that shape that nobody uses: kept, else new.
    fn zeroed(reservation: usize, mapped: usize) -> Result<KeptMemory, String> {
        let kept = {
            let mut zeroed = ZEROED.lock().unwrap_or_else(PoisonError::into_inner);
            let at = zeroed
                .iter()
                .rposition(|m| m.reservation == reservation && m.mapped == mapped);
            at.map(|at| zeroed.remove(at))
        };
        kept.map_or_else(|| KeptMemory::reserve(reservation, mapped), Ok)
    }

    /// The memory, holding what `holds` says, made live for an instance with `minimum` bytes
    /// accessible.
    fn lend(mut self, holds: Holds, minimum: usize) -> Result<KeptMemory, String> {
        // Registered first: dropped on a failure below, the memory is reset to what it holds.
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(self.base.as_ptr() as usize, holds);
        self.resize(minimum)?;
        Ok(self)
    }

    fn reserve(reservation: usize, mapped: usize) -> Result<KeptMemory, String> {
        if reservation > mapped {
            return Err(format!(
                "a reservation of {reservation} bytes does not fit {mapped} mapped"
            ));
        }
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
        Ok(KeptMemory {
            base: NonNull::new(base.cast()).ok_or("mmap returned null")?,
            reservation,
            mapped,
            size: 0,
        })
    }

    /// The memory's first byte.
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Bytes accessible now.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes the memory can grow to without moving.
    pub fn reservation(&self) -> usize {
        self.reservation
    }

    /// Makes exactly the first `new_size` bytes accessible (within the reservation).
    pub fn resize(&mut self, new_size: usize) -> Result<(), String> {
        if new_size > self.reservation {
            return Err("the memory cannot grow beyond its reservation".into());
        }
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

impl Drop for KeptMemory {
    fn drop(&mut self) {
        let holds = LIVE
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(self.base.as_ptr() as usize));
        if let Some(holds) = holds
            && self.reset(&holds)
        {
            // The mapping moves into a list; this value no longer owns it.
            if let Holds::Zeros = holds {
                let mut zeroed = ZEROED.lock().unwrap_or_else(PoisonError::into_inner);
                if zeroed.len() < KEPT_MEMORIES {
                    zeroed.push(KeptMemory { ..*self });
                    return;
                }
            } else {
                let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() < KEPT_MEMORIES {
                    kept.push((KeptMemory { ..*self }, holds));
                    return;
                }
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
    use super::*;

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

    #[test]
    fn a_kept_memory_comes_back_zeroed_where_its_instance_wrote() {
        let page = super::super::memory_image::host_page_bytes();
        // A shape of its own, so that no other test's memories are taken.
        let (reservation, mapped) = (64 * page + page, 80 * page + page);
        let mut memory = KeptMemory::take_zeroed(reservation, mapped, 2 * page).unwrap();
        let base = memory.base();
        // SAFETY: the memory's first two pages are accessible and only this test uses them.
        unsafe { base.as_ptr().add(page + 7).write(0xa5) };
        memory.resize(4 * page).unwrap();
        drop(memory);
        let again = KeptMemory::take_zeroed(reservation, mapped, 2 * page).unwrap();
        assert_eq!(again.base(), base, "the ended memory was kept");
        // SAFETY: as above.
        assert_eq!(unsafe { base.as_ptr().add(page + 7).read() }, 0);
        assert_eq!(again.size(), 2 * page);
    }
}

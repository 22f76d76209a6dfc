//! WAMR's allocator where bounds are checked by guard pages (`Alloc_With_Allocator`, each call
//! told what the allocation is for): the runtime's own allocations come from the C heap, linear
//! memories are [`KeptMemory`]s, of the shape WAMR's code expects (8 GiB reserved, the memory's
//! size accessible, grown in place) and kept between instances: a language engine's instance
//! gets one that may still hold its action's image, mapped and resident; every other module's
//! instance gets a zeroed one.

use std::{
    collections::BTreeMap,
    ffi::c_void,
    sync::{Mutex, PoisonError},
};

use wasm_executor::backend::kept_memory::KeptMemory;

/// `Alloc_For_LinearMemory` of WAMR's `mem_alloc_usage_t` (`Alloc_For_Runtime` is 0).
const FOR_LINEAR_MEMORY: u32 = 1;
/// What a memory can grow to: all a 32-bit index reaches.
const RESERVATION: usize = 4 << 30;
/// What WAMR's code may touch past a memory's base: index plus offset, both 32-bit.
const MAPPED: usize = 8 << 30;

/// The linear memories WAMR holds, by base address.
static MEMORIES: Mutex<BTreeMap<usize, KeptMemory>> = Mutex::new(BTreeMap::new());

/// The allocator's three functions, for `RuntimeInitArgs::mem_alloc_option`.
pub fn allocator() -> [*mut c_void; 3] {
    [
        allocate as *mut c_void,
        reallocate as *mut c_void,
        release as *mut c_void,
    ]
}

/// `malloc_func(usage, size)`.
extern "C" fn allocate(usage: u32, size: u32) -> *mut c_void {
    if usage != FOR_LINEAR_MEMORY {
        // SAFETY: the C heap's malloc, for WAMR's own bookkeeping.
        return unsafe { libc::malloc(size as usize) };
    }
    match KeptMemory::take(RESERVATION, MAPPED, size as usize) {
        Ok(memory) => {
            let base = memory.base().as_ptr();
            MEMORIES
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(base as usize, memory);
            base.cast()
        }
        Err(error) => {
            tracing::warn!(%error, "a linear memory could not be made");
            std::ptr::null_mut()
        }
    }
}

/// `realloc_func(usage, full_size_mmaped, ptr, size)`: a linear memory only grows, in place.
extern "C" fn reallocate(
    usage: u32,
    full_size_mmaped: bool,
    ptr: *mut c_void,
    size: u32,
) -> *mut c_void {
    if usage != FOR_LINEAR_MEMORY {
        // SAFETY: `ptr` came from this allocator's malloc for the runtime, i.e. the C heap's.
        return unsafe { libc::realloc(ptr, size as usize) };
    }
    let mut memories = MEMORIES.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(memory) = memories.get_mut(&(ptr as usize)) else {
        return std::ptr::null_mut();
    };
    // A size that does not grow the memory is refused: WAMR only grows, and a size of 4 GiB
    // wraps to 0 in its 32-bit argument.
    if !full_size_mmaped || (size as usize) < memory.size() {
        return std::ptr::null_mut();
    }
    match memory.resize(size as usize) {
        Ok(()) => ptr,
        Err(_) => std::ptr::null_mut(),
    }
}

/// `free_func(usage, ptr)`.
extern "C" fn release(usage: u32, ptr: *mut c_void) {
    if usage != FOR_LINEAR_MEMORY {
        // SAFETY: `ptr` came from this allocator's malloc or realloc for the runtime.
        return unsafe { libc::free(ptr) };
    }
    let memory = MEMORIES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&(ptr as usize));
    // Dropped outside the lock: a kept memory is reset to its image first.
    drop(memory);
}

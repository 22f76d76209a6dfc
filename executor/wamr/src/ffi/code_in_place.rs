//! Pages of the executor's own for an AOT file whose code executes in place (WAMR's XIP, from
//! `wasm-precompile-wamr --xip`): writable while WAMR loads and relocates the file, then sealed
//! read-only and executable, never both writable and executable; unmapped on drop.

use std::ptr::NonNull;

/// An anonymous mapping holding a copy of an AOT file.
pub struct CodeInPlace {
    start: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; after `seal` it is only read (and
// executed), and it is unmapped once, on drop.
unsafe impl Send for CodeInPlace {}
// SAFETY: as above: shared references never write to it.
unsafe impl Sync for CodeInPlace {}

impl CodeInPlace {
    /// Maps fresh pages and copies `file` into them, writable until [`Self::seal`].
    pub fn copy_of(file: &[u8]) -> Result<Self, String> {
        let len = file.len().max(1);
        // On x86_64 the code still carries 32-bit PC-relative relocations to the data sections
        // WAMR places in the lowest 2 GiB (its own code copies go there too), so the code must
        // be within reach of them.
        #[cfg(target_arch = "x86_64")]
        let placement = libc::MAP_32BIT;
        #[cfg(not(target_arch = "x86_64"))]
        let placement = 0;
        // SAFETY: a new private anonymous mapping at an address the kernel picks; no existing
        // memory is touched. The result is checked below.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | placement,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(format!(
                "mapping {len} bytes for code that executes in place: {}",
                std::io::Error::last_os_error()
            ));
        }
        let start = NonNull::new(start.cast::<u8>()).ok_or("mmap returned address 0")?;
        // SAFETY: the mapping is `len >= file.len()` bytes long and writable; a fresh mapping
        // cannot overlap `file`.
        unsafe { std::ptr::copy_nonoverlapping(file.as_ptr(), start.as_ptr(), file.len()) };
        Ok(CodeInPlace { start, len })
    }

    /// The copy's first byte, for WAMR to load from.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.start.as_ptr()
    }

    /// Makes the pages read-only and executable: WAMR has applied its relocations.
    pub fn seal(&self) -> Result<(), String> {
        // SAFETY: the whole mapping made in `copy_of`, still mapped; nothing writes to it after
        // the load that precedes this call.
        let sealed = unsafe {
            libc::mprotect(
                self.start.as_ptr().cast(),
                self.len,
                libc::PROT_READ | libc::PROT_EXEC,
            )
        };
        if sealed != 0 {
            return Err(format!(
                "making code that executes in place executable: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
}

impl Drop for CodeInPlace {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `copy_of`, unmapped once; the module that ran from it was
        // unloaded before (see `LoadedModule`'s field order and `drop`).
        if unsafe { libc::munmap(self.start.as_ptr().cast(), self.len) } != 0 {
            tracing::warn!(
                error = %std::io::Error::last_os_error(),
                "unmapping code that executed in place"
            );
        }
    }
}

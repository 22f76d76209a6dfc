//! Random bytes from the platform: WASI `random_get` in a module, `/dev/urandom` natively.

use crate::Error;

/// Fills `buf` with cryptographically secure random bytes.
pub fn fill(buf: &mut [u8]) -> Result<(), Error> {
    imp::fill(buf)
}

#[cfg(all(target_family = "wasm", target_os = "wasi"))]
mod imp {
    use crate::{Error, error};

    #[link(wasm_import_module = "wasi_snapshot_preview1")]
    unsafe extern "C" {
        // Same wasm signature as the standard library's own import: (i32, i32) -> i32 errno.
        #[link_name = "random_get"]
        fn wasi_random_get(buf: *mut u8, len: usize) -> i32;
    }

    pub fn fill(buf: &mut [u8]) -> Result<(), Error> {
        if buf.is_empty() {
            return Ok(());
        }
        // SAFETY: the pointer and length describe `buf`, which the host writes in full.
        let errno = unsafe { wasi_random_get(buf.as_mut_ptr(), buf.len()) };
        if errno == 0 {
            Ok(())
        } else {
            Err(error!("random_get failed with WASI errno {errno}"))
        }
    }
}

#[cfg(not(all(target_family = "wasm", target_os = "wasi")))]
mod imp {
    use crate::{Error, error};
    use std::io::Read;

    pub fn fill(buf: &mut [u8]) -> Result<(), Error> {
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(buf))
            .map_err(|e| error!("cannot read /dev/urandom: {e}"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fills() {
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        super::fill(&mut a).unwrap();
        super::fill(&mut b).unwrap();
        assert_ne!(a, b);
    }
}

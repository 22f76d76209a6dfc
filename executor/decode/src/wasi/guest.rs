//! Bounds-checked access to a guest's linear memory for the host functions: every pointer and
//! length a guest passes is untrusted, so each access either fits in memory or is `EFAULT`.
//! The decoding is independent of the runtime (its memory is one [`LinearMemory`]), so the fuzz
//! targets under `fuzz/` drive it with memories of their own.

use super::abi::{Errno, WasiResult};
use crate::host_limits::{MAX_IO_BYTES, MAX_IOVECS};

/// A guest's linear memory: reads and writes of whole ranges that either fit or fail.
pub trait LinearMemory {
    fn read(&self, at: u64, buf: &mut [u8]) -> Result<(), OutOfBounds>;
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), OutOfBounds>;
}

/// An access beyond the end of the memory.
#[derive(Debug)]
pub struct OutOfBounds;

pub struct Guest<'a> {
    view: &'a dyn LinearMemory,
}

impl<'a> Guest<'a> {
    pub fn new(view: &'a dyn LinearMemory) -> Self {
        Guest { view }
    }

    pub fn read_bytes(&self, ptr: u32, len: u32) -> WasiResult<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        self.view
            .read(u64::from(ptr), &mut buf)
            .map_err(|_| Errno::FAULT)?;
        Ok(buf)
    }

    pub fn write_bytes(&self, ptr: u32, bytes: &[u8]) -> WasiResult<()> {
        self.view
            .write(u64::from(ptr), bytes)
            .map_err(|_| Errno::FAULT)
    }

    pub fn read_u32(&self, ptr: u32) -> WasiResult<u32> {
        let mut buf = [0u8; 4];
        self.view
            .read(u64::from(ptr), &mut buf)
            .map_err(|_| Errno::FAULT)?;
        Ok(u32::from_le_bytes(buf))
    }

    pub fn write_u32(&self, ptr: u32, value: u32) -> WasiResult<()> {
        self.write_bytes(ptr, &value.to_le_bytes())
    }

    pub fn write_u64(&self, ptr: u32, value: u64) -> WasiResult<()> {
        self.write_bytes(ptr, &value.to_le_bytes())
    }

    /// A path argument: UTF-8 (WASI paths are strings), at most 4 KiB like PATH_MAX.
    pub fn read_path(&self, ptr: u32, len: u32) -> WasiResult<String> {
        if len > 4096 {
            return Err(Errno::NAMETOOLONG);
        }
        String::from_utf8(self.read_bytes(ptr, len)?).map_err(|_| Errno::ILSEQ)
    }

    /// The `(buf, len)` pairs of an iovec array, with the total length capped at `MAX_IO_BYTES`.
    pub fn iovecs(&self, iovs: u32, count: u32) -> WasiResult<Vec<(u32, u32)>> {
        if count > MAX_IOVECS {
            return Err(Errno::INVAL);
        }
        let mut out = Vec::with_capacity(count as usize);
        let mut total: u32 = 0;
        for i in 0..count {
            let at = iovs.checked_add(i * 8).ok_or(Errno::FAULT)?;
            let buf = self.read_u32(at)?;
            let len = self.read_u32(at.checked_add(4).ok_or(Errno::FAULT)?)?;
            let len = len.min(MAX_IO_BYTES - total);
            total += len;
            out.push((buf, len));
        }
        Ok(out)
    }

    /// Everything the iovecs point at, concatenated (for writes).
    pub fn gather(&self, iovs: u32, count: u32) -> WasiResult<Vec<u8>> {
        let mut out = Vec::new();
        for (buf, len) in self.iovecs(iovs, count)? {
            out.extend_from_slice(&self.read_bytes(buf, len)?);
        }
        Ok(out)
    }

    /// Spreads `data` over the iovecs (for reads); returns the bytes placed.
    pub fn scatter(&self, iovs: &[(u32, u32)], data: &[u8]) -> WasiResult<usize> {
        let mut placed = 0;
        for &(buf, len) in iovs {
            if placed == data.len() {
                break;
            }
            let take = (len as usize).min(data.len() - placed);
            self.write_bytes(buf, &data[placed..placed + take])?;
            placed += take;
        }
        Ok(placed)
    }
}

/// The total capacity of iovecs.
pub fn capacity(iovs: &[(u32, u32)]) -> usize {
    iovs.iter().map(|&(_, len)| len as usize).sum()
}

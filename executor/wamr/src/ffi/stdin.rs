//! The guest's stdin: the parameters in an anonymous in-memory file (memfd), so WASI reads,
//! seeks and sizes behave as on a regular file and parameters of any size need no writer
//! thread (a pipe would block beyond its 64 KiB buffer).

use std::{
    fs::File,
    io::{self, Seek, SeekFrom, Write},
    os::fd::{AsFd, BorrowedFd, FromRawFd},
};

pub struct ParamsFile(File);

impl ParamsFile {
    pub fn new(params: &[u8]) -> io::Result<Self> {
        // SAFETY: a plain system call with a static NUL-terminated name; the result is checked.
        let fd = unsafe { libc::memfd_create(c"owparams".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let mut file = unsafe { File::from_raw_fd(fd) };
        file.write_all(params)?;
        file.seek(SeekFrom::Start(0))?;
        Ok(ParamsFile(file))
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

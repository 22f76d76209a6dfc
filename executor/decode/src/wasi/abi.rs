//! The WASI preview 1 ABI as guests see it: error numbers, flags, and the byte layout of the
//! structures exchanged through guest memory (from the `wasi_snapshot_preview1` witx).

use std::io;

/// A WASI error number (success, 0, is `Ok` and never an `Errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub u16);

impl Errno {
    pub const ACCES: Errno = Errno(2);
    pub const AGAIN: Errno = Errno(6);
    pub const BADF: Errno = Errno(8);
    pub const BUSY: Errno = Errno(10);
    pub const EXIST: Errno = Errno(20);
    pub const FAULT: Errno = Errno(21);
    pub const FBIG: Errno = Errno(22);
    pub const ILSEQ: Errno = Errno(25);
    pub const INTR: Errno = Errno(27);
    pub const INVAL: Errno = Errno(28);
    pub const IO: Errno = Errno(29);
    pub const ISDIR: Errno = Errno(31);
    pub const LOOP: Errno = Errno(32);
    pub const MFILE: Errno = Errno(33);
    pub const MLINK: Errno = Errno(34);
    pub const NAMETOOLONG: Errno = Errno(37);
    pub const NOENT: Errno = Errno(44);
    pub const NOMEM: Errno = Errno(48);
    pub const NOSPC: Errno = Errno(51);
    pub const NOSYS: Errno = Errno(52);
    pub const NOTDIR: Errno = Errno(54);
    pub const NOTEMPTY: Errno = Errno(55);
    pub const NOTSUP: Errno = Errno(58);
    pub const NOTTY: Errno = Errno(59);
    pub const OVERFLOW: Errno = Errno(61);
    pub const PERM: Errno = Errno(63);
    pub const PIPE: Errno = Errno(64);
    pub const ROFS: Errno = Errno(69);
    pub const SPIPE: Errno = Errno(70);
    pub const XDEV: Errno = Errno(75);
    pub const NOTCAPABLE: Errno = Errno(76);
}

impl From<io::Error> for Errno {
    fn from(error: io::Error) -> Self {
        if let Some(code) = error.raw_os_error() {
            return from_os(code);
        }
        // cap-std reports a path that would leave the granted directory as PermissionDenied
        // without an OS error: that is exactly "not capable".
        match error.kind() {
            io::ErrorKind::NotFound => Errno::NOENT,
            io::ErrorKind::PermissionDenied => Errno::NOTCAPABLE,
            io::ErrorKind::AlreadyExists => Errno::EXIST,
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => Errno::INVAL,
            io::ErrorKind::NotADirectory => Errno::NOTDIR,
            io::ErrorKind::IsADirectory => Errno::ISDIR,
            io::ErrorKind::DirectoryNotEmpty => Errno::NOTEMPTY,
            io::ErrorKind::Unsupported => Errno::NOTSUP,
            io::ErrorKind::Interrupted => Errno::INTR,
            io::ErrorKind::WouldBlock => Errno::AGAIN,
            io::ErrorKind::OutOfMemory => Errno::NOMEM,
            _ => Errno::IO,
        }
    }
}

/// Linux errno values (identical on x86_64 and aarch64) to WASI's numbering.
fn from_os(code: i32) -> Errno {
    match code {
        1 => Errno::PERM,
        2 => Errno::NOENT,
        4 => Errno::INTR,
        5 => Errno::IO,
        9 => Errno::BADF,
        11 => Errno::AGAIN,
        12 => Errno::NOMEM,
        13 => Errno::ACCES,
        16 => Errno::BUSY,
        17 => Errno::EXIST,
        18 => Errno::XDEV,
        20 => Errno::NOTDIR,
        21 => Errno::ISDIR,
        22 => Errno::INVAL,
        24 => Errno::MFILE,
        25 => Errno::NOTTY,
        27 => Errno::FBIG,
        28 => Errno::NOSPC,
        29 => Errno::SPIPE,
        30 => Errno::ROFS,
        31 => Errno::MLINK,
        32 => Errno::PIPE,
        36 => Errno::NAMETOOLONG,
        38 => Errno::NOSYS,
        39 => Errno::NOTEMPTY,
        40 => Errno::LOOP,
        75 => Errno::OVERFLOW,
        84 => Errno::ILSEQ,
        95 => Errno::NOTSUP,
        _ => Errno::IO,
    }
}

pub type WasiResult<T> = Result<T, Errno>;

/// `filetype`
pub mod filetype {
    pub const UNKNOWN: u8 = 0;
    pub const BLOCK_DEVICE: u8 = 1;
    pub const CHARACTER_DEVICE: u8 = 2;
    pub const DIRECTORY: u8 = 3;
    pub const REGULAR_FILE: u8 = 4;
    pub const SOCKET_STREAM: u8 = 6;
    pub const SYMBOLIC_LINK: u8 = 7;

    /// The WASI file type of a Unix `st_mode`.
    pub fn from_mode(mode: u32) -> u8 {
        match mode & 0o170_000 {
            0o040_000 => DIRECTORY,
            0o100_000 => REGULAR_FILE,
            0o120_000 => SYMBOLIC_LINK,
            0o020_000 => CHARACTER_DEVICE,
            0o060_000 => BLOCK_DEVICE,
            0o140_000 => SOCKET_STREAM,
            _ => UNKNOWN,
        }
    }
}

/// `oflags` of `path_open`.
pub mod oflags {
    pub const CREAT: u16 = 1;
    pub const DIRECTORY: u16 = 2;
    pub const EXCL: u16 = 4;
    pub const TRUNC: u16 = 8;
}

/// `fdflags`
pub mod fdflags {
    pub const APPEND: u16 = 1;
}

/// `lookupflags`
pub const LOOKUP_SYMLINK_FOLLOW: u32 = 1;

/// `fstflags` of the set-times calls.
pub mod fstflags {
    pub const ATIM: u16 = 1;
    pub const ATIM_NOW: u16 = 2;
    pub const MTIM: u16 = 4;
    pub const MTIM_NOW: u16 = 8;
}

/// `rights`: only the two that decide how a file is opened are interpreted; every descriptor
/// reports all rights, since the capability boundary is the granted directory itself.
pub mod rights {
    pub const FD_READ: u64 = 1 << 1;
    pub const FD_WRITE: u64 = 1 << 6;
    pub const ALL: u64 = (1 << 30) - 1;
}

/// `clockid`
pub mod clock {
    pub const REALTIME: u32 = 0;
    pub const MONOTONIC: u32 = 1;
    pub const PROCESS_CPUTIME: u32 = 2;
    pub const THREAD_CPUTIME: u32 = 3;
}

/// `whence` of `fd_seek`.
pub mod whence {
    pub const SET: u8 = 0;
    pub const CUR: u8 = 1;
    pub const END: u8 = 2;
}

/// `filestat`: 64 bytes.
#[derive(Debug, Default, Clone, Copy)]
pub struct Filestat {
    pub dev: u64,
    pub ino: u64,
    pub filetype: u8,
    pub nlink: u64,
    pub size: u64,
    pub atim: u64,
    pub mtim: u64,
    pub ctim: u64,
}

impl Filestat {
    pub fn to_bytes(self) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[0..8].copy_from_slice(&self.dev.to_le_bytes());
        out[8..16].copy_from_slice(&self.ino.to_le_bytes());
        out[16] = self.filetype;
        out[24..32].copy_from_slice(&self.nlink.to_le_bytes());
        out[32..40].copy_from_slice(&self.size.to_le_bytes());
        out[40..48].copy_from_slice(&self.atim.to_le_bytes());
        out[48..56].copy_from_slice(&self.mtim.to_le_bytes());
        out[56..64].copy_from_slice(&self.ctim.to_le_bytes());
        out
    }
}

/// `fdstat`: 24 bytes.
pub fn fdstat_bytes(filetype: u8, flags: u16) -> [u8; 24] {
    let mut out = [0u8; 24];
    out[0] = filetype;
    out[2..4].copy_from_slice(&flags.to_le_bytes());
    out[8..16].copy_from_slice(&rights::ALL.to_le_bytes());
    out[16..24].copy_from_slice(&rights::ALL.to_le_bytes());
    out
}

/// The header of a `dirent` (24 bytes); the name follows it.
pub fn dirent_header(next_cookie: u64, ino: u64, name_len: u32, filetype: u8) -> [u8; 24] {
    let mut out = [0u8; 24];
    out[0..8].copy_from_slice(&next_cookie.to_le_bytes());
    out[8..16].copy_from_slice(&ino.to_le_bytes());
    out[16..20].copy_from_slice(&name_len.to_le_bytes());
    out[20] = filetype;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_map_to_wasi_numbers() {
        assert_eq!(Errno::from(io::Error::from_raw_os_error(2)), Errno::NOENT);
        assert_eq!(
            Errno::from(io::Error::from_raw_os_error(39)),
            Errno::NOTEMPTY
        );
        let escape = io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a path led outside of the filesystem",
        );
        assert_eq!(Errno::from(escape), Errno::NOTCAPABLE);
    }

    #[test]
    fn layouts_match_the_witx() {
        let stat = Filestat {
            filetype: filetype::REGULAR_FILE,
            size: 5,
            ..Filestat::default()
        };
        let bytes = stat.to_bytes();
        assert_eq!(bytes[16], 4);
        assert_eq!(u64::from_le_bytes(bytes[32..40].try_into().unwrap()), 5);
        assert_eq!(fdstat_bytes(filetype::DIRECTORY, 0)[0], 3);
        assert_eq!(filetype::from_mode(0o040_755), filetype::DIRECTORY);
    }
}

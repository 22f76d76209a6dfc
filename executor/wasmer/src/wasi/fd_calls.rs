//! The `fd_*` functions: reads, writes and metadata of open descriptors.

use std::{
    io::{Read, Seek, SeekFrom, Write},
    os::unix::fs::FileExt,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use super::{
    WasiCall,
    abi::{
        Errno, Filestat, WasiResult, dirent_header, fdflags, fdstat_bytes, filetype, fstflags,
        whence,
    },
    fds::Descriptor,
    guest::capacity,
};
use wasm_executor::logs::Stream;

pub fn fd_write(call: &mut WasiCall<'_>, fd: u32, iovs: u32, len: u32, out: u32) -> WasiResult<()> {
    let data = call.guest.gather(iovs, len)?;
    let written = match call.ctx.fds.get_mut(fd)? {
        Descriptor::Stdout => {
            call.ctx.output.write(Stream::Stdout, &data);
            data.len()
        }
        Descriptor::Stderr => {
            call.ctx.output.write(Stream::Stderr, &data);
            data.len()
        }
        Descriptor::File { file, .. } => file.write(&data)?,
        Descriptor::Stdin => return Err(Errno::BADF),
        Descriptor::Dir { .. } => return Err(Errno::ISDIR),
    };
    call.guest.write_u32(out, written as u32)
}

pub fn fd_pwrite(
    call: &mut WasiCall<'_>,
    fd: u32,
    iovs: u32,
    len: u32,
    offset: u64,
    out: u32,
) -> WasiResult<()> {
    let data = call.guest.gather(iovs, len)?;
    let written = match call.ctx.fds.get(fd)? {
        Descriptor::File { file, .. } => file.write_at(&data, offset)?,
        Descriptor::Dir { .. } => return Err(Errno::ISDIR),
        _ => return Err(Errno::SPIPE),
    };
    call.guest.write_u32(out, written as u32)
}

pub fn fd_read(call: &mut WasiCall<'_>, fd: u32, iovs: u32, len: u32, out: u32) -> WasiResult<()> {
    let iovs = call.guest.iovecs(iovs, len)?;
    let want = capacity(&iovs);
    let data = match call.ctx.fds.get_mut(fd)? {
        Descriptor::Stdin => {
            let start = call.ctx.stdin_read;
            let end = (start + want).min(call.ctx.stdin.len());
            call.ctx.stdin_read = end;
            call.ctx.stdin[start..end].to_vec()
        }
        Descriptor::File { file, .. } => {
            let mut buf = vec![0u8; want];
            let read = file.read(&mut buf)?;
            buf.truncate(read);
            buf
        }
        Descriptor::Dir { .. } => return Err(Errno::ISDIR),
        Descriptor::Stdout | Descriptor::Stderr => return Err(Errno::BADF),
    };
    let placed = call.guest.scatter(&iovs, &data)?;
    call.guest.write_u32(out, placed as u32)
}

pub fn fd_pread(
    call: &mut WasiCall<'_>,
    fd: u32,
    iovs: u32,
    len: u32,
    offset: u64,
    out: u32,
) -> WasiResult<()> {
    let iovs = call.guest.iovecs(iovs, len)?;
    let mut buf = vec![0u8; capacity(&iovs)];
    let read = match call.ctx.fds.get(fd)? {
        Descriptor::File { file, .. } => file.read_at(&mut buf, offset)?,
        Descriptor::Dir { .. } => return Err(Errno::ISDIR),
        _ => return Err(Errno::SPIPE),
    };
    let placed = call.guest.scatter(&iovs, &buf[..read])?;
    call.guest.write_u32(out, placed as u32)
}

pub fn fd_seek(
    call: &mut WasiCall<'_>,
    fd: u32,
    offset: i64,
    how: u32,
    out: u32,
) -> WasiResult<()> {
    let target = match u8::try_from(how).map_err(|_| Errno::INVAL)? {
        whence::SET => SeekFrom::Start(u64::try_from(offset).map_err(|_| Errno::INVAL)?),
        whence::CUR => SeekFrom::Current(offset),
        whence::END => SeekFrom::End(offset),
        _ => return Err(Errno::INVAL),
    };
    let position = match call.ctx.fds.get_mut(fd)? {
        Descriptor::File { file, .. } => file.seek(target)?,
        Descriptor::Dir { .. } => return Err(Errno::BADF),
        _ => return Err(Errno::SPIPE),
    };
    call.guest.write_u64(out, position)
}

pub fn fd_tell(call: &mut WasiCall<'_>, fd: u32, out: u32) -> WasiResult<()> {
    fd_seek(call, fd, 0, u32::from(whence::CUR), out)
}

pub fn fd_close(call: &mut WasiCall<'_>, fd: u32) -> WasiResult<()> {
    call.ctx.fds.remove(fd).map(drop)
}

pub fn fd_renumber(call: &mut WasiCall<'_>, from: u32, to: u32) -> WasiResult<()> {
    call.ctx.fds.renumber(from, to)
}

pub fn fd_fdstat_get(call: &mut WasiCall<'_>, fd: u32, out: u32) -> WasiResult<()> {
    let (kind, flags) = match call.ctx.fds.get(fd)? {
        Descriptor::Stdin | Descriptor::Stdout | Descriptor::Stderr => {
            (filetype::CHARACTER_DEVICE, 0)
        }
        Descriptor::Dir { .. } => (filetype::DIRECTORY, 0),
        Descriptor::File { file, append } => {
            use std::os::unix::fs::MetadataExt;
            let kind = filetype::from_mode(file.metadata()?.mode());
            (kind, if *append { fdflags::APPEND } else { 0 })
        }
    };
    call.guest.write_bytes(out, &fdstat_bytes(kind, flags))
}

/// Flags cannot change after opening here; asking for the current ones is fine.
pub fn fd_fdstat_set_flags(call: &mut WasiCall<'_>, fd: u32, flags: u32) -> WasiResult<()> {
    let current = match call.ctx.fds.get(fd)? {
        Descriptor::File { append: true, .. } => u32::from(fdflags::APPEND),
        _ => 0,
    };
    if flags == current {
        Ok(())
    } else {
        Err(Errno::NOTSUP)
    }
}

/// Rights are not enforced per descriptor (the granted directory is the capability), so
/// narrowing them always succeeds.
pub fn fd_fdstat_set_rights(
    call: &mut WasiCall<'_>,
    fd: u32,
    _base: u64,
    _inheriting: u64,
) -> WasiResult<()> {
    call.ctx.fds.get(fd).map(drop)
}

pub fn fd_filestat_get(call: &mut WasiCall<'_>, fd: u32, out: u32) -> WasiResult<()> {
    let stat = match call.ctx.fds.get(fd)? {
        Descriptor::Stdin | Descriptor::Stdout | Descriptor::Stderr => Filestat {
            filetype: filetype::CHARACTER_DEVICE,
            ..Filestat::default()
        },
        Descriptor::File { file, .. } => filestat_of_std(&file.metadata()?),
        Descriptor::Dir { dir, .. } => filestat_of_cap(&dir.dir_metadata()?),
    };
    call.guest.write_bytes(out, &stat.to_bytes())
}

pub fn fd_filestat_set_size(call: &mut WasiCall<'_>, fd: u32, size: u64) -> WasiResult<()> {
    file_of(call, fd)?.set_len(size).map_err(Errno::from)
}

pub fn fd_filestat_set_times(
    call: &mut WasiCall<'_>,
    fd: u32,
    atim: u64,
    mtim: u64,
    flags: u32,
) -> WasiResult<()> {
    set_times(file_of(call, fd)?, atim, mtim, flags)
}

pub fn fd_allocate(call: &mut WasiCall<'_>, fd: u32, offset: u64, len: u64) -> WasiResult<()> {
    let file = file_of(call, fd)?;
    let end = offset.checked_add(len).ok_or(Errno::FBIG)?;
    if file.metadata()?.len() < end {
        file.set_len(end)?;
    }
    Ok(())
}

pub fn fd_advise(
    call: &mut WasiCall<'_>,
    fd: u32,
    _offset: u64,
    _len: u64,
    advice: u32,
) -> WasiResult<()> {
    if advice > 5 {
        return Err(Errno::INVAL);
    }
    call.ctx.fds.get(fd).map(drop)
}

pub fn fd_sync(call: &mut WasiCall<'_>, fd: u32) -> WasiResult<()> {
    match call.ctx.fds.get(fd)? {
        Descriptor::File { file, .. } => file.sync_all().map_err(Errno::from),
        _ => Ok(()),
    }
}

pub fn fd_datasync(call: &mut WasiCall<'_>, fd: u32) -> WasiResult<()> {
    match call.ctx.fds.get(fd)? {
        Descriptor::File { file, .. } => file.sync_data().map_err(Errno::from),
        _ => Ok(()),
    }
}

/// Describes a preopened directory; wasi-libc asks for descriptors from 3 upward until `EBADF`.
pub fn fd_prestat_get(call: &mut WasiCall<'_>, fd: u32, out: u32) -> WasiResult<()> {
    match call.ctx.fds.get(fd)? {
        Descriptor::Dir {
            preopen: Some(path),
            ..
        } => {
            let mut prestat = [0u8; 8];
            prestat[4..8].copy_from_slice(&(path.len() as u32).to_le_bytes());
            call.guest.write_bytes(out, &prestat)
        }
        _ => Err(Errno::BADF),
    }
}

pub fn fd_prestat_dir_name(call: &mut WasiCall<'_>, fd: u32, buf: u32, len: u32) -> WasiResult<()> {
    match call.ctx.fds.get(fd)? {
        Descriptor::Dir {
            preopen: Some(path),
            ..
        } => {
            if (len as usize) < path.len() {
                return Err(Errno::NAMETOOLONG);
            }
            call.guest.write_bytes(buf, path.as_bytes())
        }
        _ => Err(Errno::BADF),
    }
}

/// Lists a directory as `dirent`s from `cookie` on (`.` and `..` first, then by name), filling
/// the buffer; a last entry cut off by the buffer's end tells the guest to ask again.
pub fn fd_readdir(
    call: &mut WasiCall<'_>,
    fd: u32,
    buf: u32,
    len: u32,
    cookie: u64,
    out: u32,
) -> WasiResult<()> {
    use cap_std::fs::MetadataExt;
    let dir = call.ctx.fds.dir(fd)?;
    let own_ino = dir.dir_metadata()?.ino();
    let mut entries = vec![
        (".".to_owned(), own_ino, filetype::DIRECTORY),
        ("..".to_owned(), 0, filetype::DIRECTORY),
    ];
    let mut listed = Vec::new();
    for entry in dir.entries()? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let (ino, kind) = match entry.metadata() {
            Ok(meta) => (meta.ino(), filetype::from_mode(meta.mode())),
            Err(_) => (0, filetype::UNKNOWN),
        };
        listed.push((name, ino, kind));
    }
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    entries.extend(listed);

    let mut bytes = Vec::new();
    for (index, (name, ino, kind)) in entries
        .iter()
        .enumerate()
        .skip(usize::try_from(cookie).unwrap_or(usize::MAX))
    {
        if bytes.len() >= len as usize {
            break;
        }
        bytes.extend_from_slice(&dirent_header(
            index as u64 + 1,
            *ino,
            name.len() as u32,
            *kind,
        ));
        bytes.extend_from_slice(name.as_bytes());
    }
    bytes.truncate(len as usize);
    call.guest.write_bytes(buf, &bytes)?;
    call.guest.write_u32(out, bytes.len() as u32)
}

fn file_of<'a>(call: &'a mut WasiCall<'_>, fd: u32) -> WasiResult<&'a std::fs::File> {
    match call.ctx.fds.get(fd)? {
        Descriptor::File { file, .. } => Ok(file),
        Descriptor::Dir { .. } => Err(Errno::ISDIR),
        _ => Err(Errno::BADF),
    }
}

/// Sets access and modification times as `fstflags` says (`ATIM_NOW` means now).
pub fn set_times(file: &std::fs::File, atim: u64, mtim: u64, flags: u32) -> WasiResult<()> {
    let flags = u16::try_from(flags).map_err(|_| Errno::INVAL)?;
    let at = |ns: u64| UNIX_EPOCH + Duration::from_nanos(ns);
    let mut times = std::fs::FileTimes::new();
    if flags & fstflags::ATIM_NOW != 0 {
        times = times.set_accessed(SystemTime::now());
    } else if flags & fstflags::ATIM != 0 {
        times = times.set_accessed(at(atim));
    }
    if flags & fstflags::MTIM_NOW != 0 {
        times = times.set_modified(SystemTime::now());
    } else if flags & fstflags::MTIM != 0 {
        times = times.set_modified(at(mtim));
    }
    file.set_times(times).map_err(Errno::from)
}

fn nanos(secs: i64, nsec: i64) -> u64 {
    u64::try_from(secs)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(nsec).unwrap_or(0))
}

pub fn filestat_of_std(meta: &std::fs::Metadata) -> Filestat {
    use std::os::unix::fs::MetadataExt;
    Filestat {
        dev: meta.dev(),
        ino: meta.ino(),
        filetype: filetype::from_mode(meta.mode()),
        nlink: meta.nlink(),
        size: meta.size(),
        atim: nanos(meta.atime(), meta.atime_nsec()),
        mtim: nanos(meta.mtime(), meta.mtime_nsec()),
        ctim: nanos(meta.ctime(), meta.ctime_nsec()),
    }
}

pub fn filestat_of_cap(meta: &cap_std::fs::Metadata) -> Filestat {
    use cap_std::fs::MetadataExt;
    Filestat {
        dev: meta.dev(),
        ino: meta.ino(),
        filetype: filetype::from_mode(meta.mode()),
        nlink: meta.nlink(),
        size: meta.size(),
        atim: nanos(meta.atime(), meta.atime_nsec()),
        mtim: nanos(meta.mtime(), meta.mtime_nsec()),
        ctim: nanos(meta.ctime(), meta.ctime_nsec()),
    }
}

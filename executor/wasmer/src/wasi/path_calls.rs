//! The `path_*` functions: everything that names a file relative to a directory descriptor.
//! Each one goes through `cap_std::fs::Dir`, which refuses any path (`..`, absolute, or through
//! a symlink) that would resolve outside the directory it was opened from.

use super::{
    WasiCall,
    abi::{Errno, LOOKUP_SYMLINK_FOLLOW, WasiResult, oflags, rights},
    fd_calls::{filestat_of_cap, set_times},
    fds::Descriptor,
};

// The WASI signature decides the arguments.
#[allow(clippy::too_many_arguments)]
pub fn path_open(
    call: &mut WasiCall<'_>,
    fd: u32,
    _dirflags: u32,
    path: u32,
    len: u32,
    open_flags: u32,
    base: u64,
    _inheriting: u64,
    fd_flags: u32,
    out: u32,
) -> WasiResult<()> {
    let path = call.guest.read_path(path, len)?;
    let open_flags = u16::try_from(open_flags).map_err(|_| Errno::INVAL)?;
    let append = fd_flags & u32::from(super::abi::fdflags::APPEND) != 0;
    let dir = call.ctx.fds.dir(fd)?;
    let descriptor = if open_flags & oflags::DIRECTORY != 0 {
        if open_flags & (oflags::CREAT | oflags::TRUNC) != 0 {
            return Err(Errno::INVAL);
        }
        Descriptor::Dir {
            dir: dir.open_dir(&path)?,
            preopen: None,
        }
    } else {
        let create = open_flags & oflags::CREAT != 0;
        let exclusive = open_flags & oflags::EXCL != 0;
        let truncate = open_flags & oflags::TRUNC != 0;
        let mut write = base & rights::FD_WRITE != 0 || append || truncate;
        let mut read = base & rights::FD_READ != 0;
        if !read && !write {
            // Opened for metadata only (e.g. a `stat` through a descriptor): read-only suffices.
            read = true;
        }
        if create && !write && !read {
            write = true;
        }
        let mut options = cap_std::fs::OpenOptions::new();
        options
            .read(read)
            .write(write)
            .append(append)
            .truncate(truncate)
            .create(create && !exclusive)
            .create_new(create && exclusive);
        let file = dir.open_with(&path, &options)?.into_std();
        if file.metadata()?.is_dir() {
            // C's open(dir, O_RDONLY) without O_DIRECTORY: still a directory for readdir.
            Descriptor::Dir {
                dir: cap_std::fs::Dir::from_std_file(file),
                preopen: None,
            }
        } else {
            Descriptor::File { file, append }
        }
    };
    let new_fd = call.ctx.fds.insert(descriptor)?;
    call.guest.write_u32(out, new_fd)
}

pub fn path_create_directory(
    call: &mut WasiCall<'_>,
    fd: u32,
    path: u32,
    len: u32,
) -> WasiResult<()> {
    let path = call.guest.read_path(path, len)?;
    call.ctx.fds.dir(fd)?.create_dir(path).map_err(Errno::from)
}

pub fn path_remove_directory(
    call: &mut WasiCall<'_>,
    fd: u32,
    path: u32,
    len: u32,
) -> WasiResult<()> {
    let path = call.guest.read_path(path, len)?;
    call.ctx.fds.dir(fd)?.remove_dir(path).map_err(Errno::from)
}

pub fn path_unlink_file(call: &mut WasiCall<'_>, fd: u32, path: u32, len: u32) -> WasiResult<()> {
    let path = call.guest.read_path(path, len)?;
    call.ctx.fds.dir(fd)?.remove_file(path).map_err(Errno::from)
}

pub fn path_rename(
    call: &mut WasiCall<'_>,
    fd: u32,
    old: u32,
    old_len: u32,
    new_fd: u32,
    new: u32,
    new_len: u32,
) -> WasiResult<()> {
    let old = call.guest.read_path(old, old_len)?;
    let new = call.guest.read_path(new, new_len)?;
    let from = call.ctx.fds.dir(fd)?;
    let to = call.ctx.fds.dir(new_fd)?;
    from.rename(old, to, new).map_err(Errno::from)
}

// The WASI signature decides the arguments.
#[allow(clippy::too_many_arguments)]
pub fn path_link(
    call: &mut WasiCall<'_>,
    old_fd: u32,
    _flags: u32,
    old: u32,
    old_len: u32,
    new_fd: u32,
    new: u32,
    new_len: u32,
) -> WasiResult<()> {
    let old = call.guest.read_path(old, old_len)?;
    let new = call.guest.read_path(new, new_len)?;
    let from = call.ctx.fds.dir(old_fd)?;
    let to = call.ctx.fds.dir(new_fd)?;
    from.hard_link(old, to, new).map_err(Errno::from)
}

/// Creating a symlink is harmless: following one out of the directory is what cap-std refuses.
pub fn path_symlink(
    call: &mut WasiCall<'_>,
    old: u32,
    old_len: u32,
    fd: u32,
    new: u32,
    new_len: u32,
) -> WasiResult<()> {
    let target = call.guest.read_path(old, old_len)?;
    let link = call.guest.read_path(new, new_len)?;
    call.ctx
        .fds
        .dir(fd)?
        .symlink(target, link)
        .map_err(Errno::from)
}

pub fn path_readlink(
    call: &mut WasiCall<'_>,
    fd: u32,
    path: u32,
    len: u32,
    buf: u32,
    buf_len: u32,
    out: u32,
) -> WasiResult<()> {
    let path = call.guest.read_path(path, len)?;
    let target = call.ctx.fds.dir(fd)?.read_link_contents(path)?;
    let bytes = target.to_string_lossy().into_owned().into_bytes();
    let n = bytes.len().min(buf_len as usize);
    call.guest.write_bytes(buf, &bytes[..n])?;
    call.guest.write_u32(out, n as u32)
}

pub fn path_filestat_get(
    call: &mut WasiCall<'_>,
    fd: u32,
    flags: u32,
    path: u32,
    len: u32,
    out: u32,
) -> WasiResult<()> {
    let path = call.guest.read_path(path, len)?;
    let dir = call.ctx.fds.dir(fd)?;
    let meta = if flags & LOOKUP_SYMLINK_FOLLOW != 0 {
        dir.metadata(path)?
    } else {
        dir.symlink_metadata(path)?
    };
    call.guest
        .write_bytes(out, &filestat_of_cap(&meta).to_bytes())
}

// The WASI signature decides the arguments.
#[allow(clippy::too_many_arguments)]
pub fn path_filestat_set_times(
    call: &mut WasiCall<'_>,
    fd: u32,
    _flags: u32,
    path: u32,
    len: u32,
    atim: u64,
    mtim: u64,
    fst: u32,
) -> WasiResult<()> {
    let path = call.guest.read_path(path, len)?;
    let file = call.ctx.fds.dir(fd)?.open(path)?.into_std();
    set_times(&file, atim, mtim, fst)
}

//! Native functions WAMR calls on the guest's thread, each finding the activation's
//! [`HostState`] through the instance's custom data:
//!
//! - `fd_write`, registered over WASI's own (for `wasi_snapshot_preview1` and the older
//!   `wasi_unstable`), bounded in iovecs and bytes: writes to fd 1 and 2 go straight into the
//!   activation's capture, so
//!   stdout and stderr keep their order and their names; every other descriptor goes to WAMR's
//!   implementation. The signature is WASI's (`(i*i*)i`): the AOT compiler calls WASI natives
//!   directly with that signature, so the override must match it exactly;
//! - `random_get`, registered over WASI's own (`(*~)i`): filled a chunk at a time, stopped
//!   at the deadline;
//! - `path_open`, `fd_close` and `fd_renumber`, WAMR's own behind a count of what the guest
//!   holds open (`backend/opened.rs`);
//! - `poll_oneoff`, registered over WASI's own in the same way (`(**i*)i`): WAMR's
//!   implementation waits without the guest's CPU slot, so a sleeping guest holds only its
//!   thread;
//! - `openwhisk::http_get` / `http_read`, registered for every module but only reachable by
//!   modules that passed /init's import check (which requires `net_access`), and their twins
//!   `http_try_get` / `http_try_read`, which every module may import (without `net_access`
//!   a GET through them is answered "not permitted");
//! - the memory-growth callback, which notes refusals beyond the container's limit.

use std::{
    ffi::{CStr, c_void},
    ptr, slice,
    sync::OnceLock,
};

use wamr_runtime_sys as sys;

use crate::host::HostState;
use wasm_executor::backend::http_import::{self, HttpImportFault, Pair};
use wasm_executor::{
    backend::{
        host_limits::{MAX_IO_BYTES, MAX_IOVECS, RANDOM_CHUNK},
        opened::ERRNO_MFILE,
    },
    capability::{CapabilityId, net_access},
};

/// WASI's `errno::fault`.
const ERRNO_FAULT: u32 = 21;
/// WASI's `errno::inval`.
const ERRNO_INVAL: u32 = 28;
/// WASI's `errno::io`.
const ERRNO_IO: u32 = 29;
/// WASI's `errno::nosys`.
const ERRNO_NOSYS: u32 = 52;

/// WASI's `ciovec` in guest memory: offset and length, little-endian u32s.
#[repr(C)]
#[derive(Clone, Copy)]
struct GuestIovec {
    offset: u32,
    len: u32,
}

type WasiFdWrite =
    unsafe extern "C" fn(sys::wasm_exec_env_t, u32, *const GuestIovec, u32, *mut u32) -> u32;

/// WASI's `path_open` (`(ii*~iIIi*)i`): directory, lookup flags, path and its length, open
/// flags, base and inheriting rights, descriptor flags, where the new descriptor goes.
type WasiPathOpen = unsafe extern "C" fn(
    sys::wasm_exec_env_t,
    u32,
    u32,
    *const u8,
    u32,
    u32,
    u64,
    u64,
    u32,
    *mut u32,
) -> u32;

/// WASI's `fd_close` (`(i)i`).
type WasiFdClose = unsafe extern "C" fn(sys::wasm_exec_env_t, u32) -> u32;

/// WASI's `fd_renumber` (`(ii)i`).
type WasiFdRenumber = unsafe extern "C" fn(sys::wasm_exec_env_t, u32, u32) -> u32;

/// WASI's `poll_oneoff`: subscriptions in, events out (both in guest memory, checked by the
/// implementation), their count, where the number of events goes.
type WasiPollOneoff =
    unsafe extern "C" fn(sys::wasm_exec_env_t, *const u8, *mut u8, u32, *mut u32) -> u32;

/// WAMR's own WASI functions that the overrides delegate to, found once at registration. Not
/// passed as the natives' attachments: AOT code calls WASI natives directly, without setting
/// the execution environment's attachment.
static WASI_ORIGINALS: OnceLock<Originals> = OnceLock::new();

struct Originals {
    fd_write: WasiFdWrite,
    poll_oneoff: WasiPollOneoff,
    path_open: WasiPathOpen,
    fd_close: WasiFdClose,
    fd_renumber: WasiFdRenumber,
}

/// Registers the natives; called once, right after the runtime is initialised.
pub fn register() -> Result<(), String> {
    // SAFETY: WAMR's WASI table holds these functions with exactly these signatures (the
    // registrations below repeat them).
    let originals = unsafe {
        Originals {
            fd_write: std::mem::transmute::<*mut c_void, WasiFdWrite>(wasi_native(c"fd_write")?),
            poll_oneoff: std::mem::transmute::<*mut c_void, WasiPollOneoff>(wasi_native(
                c"poll_oneoff",
            )?),
            path_open: std::mem::transmute::<*mut c_void, WasiPathOpen>(wasi_native(c"path_open")?),
            fd_close: std::mem::transmute::<*mut c_void, WasiFdClose>(wasi_native(c"fd_close")?),
            fd_renumber: std::mem::transmute::<*mut c_void, WasiFdRenumber>(wasi_native(
                c"fd_renumber",
            )?),
        }
    };
    WASI_ORIGINALS.get_or_init(|| originals);
    for module in [c"wasi_snapshot_preview1", c"wasi_unstable"] {
        register_module(
            module,
            vec![
                symbol(c"fd_write", fd_write as *mut c_void, c"(i*i*)i"),
                symbol(c"poll_oneoff", poll_oneoff as *mut c_void, c"(**i*)i"),
                symbol(c"random_get", random_get as *mut c_void, c"(*~)i"),
                symbol(c"path_open", path_open as *mut c_void, c"(ii*~iIIi*)i"),
                symbol(c"fd_close", fd_close as *mut c_void, c"(i)i"),
                symbol(c"fd_renumber", fd_renumber as *mut c_void, c"(ii)i"),
            ],
        )?;
    }
    // WAMR resolves imports against every registered native: the host functions of all
    // capabilities are registered, and /init refuses a module importing those of a capability
    // its container was not granted (`GrantSet::withholds`).
    for id in CapabilityId::ALL {
        match id {
            // Through WASI's preopened directories.
            CapabilityId::Dir => {}
            CapabilityId::NetAccess => {
                debug_assert_eq!(
                    net_access::DESCRIPTOR.imports,
                    [("openwhisk", "http_get"), ("openwhisk", "http_read")]
                );
                debug_assert_eq!(
                    [http_import::TRY_GET, http_import::TRY_READ],
                    ["http_try_get", "http_try_read"]
                );
                register_module(
                    c"openwhisk",
                    vec![
                        symbol(c"http_get", http_get as *mut c_void, c"(iiii)i"),
                        symbol(c"http_read", http_read as *mut c_void, c"(ii)i"),
                        // The twins every module may import (`http_import::TRY_GET`).
                        symbol(c"http_try_get", http_try_get as *mut c_void, c"(iiii)i"),
                        symbol(c"http_try_read", http_try_read as *mut c_void, c"(ii)i"),
                    ],
                )?;
            }
        }
    }
    Ok(())
}

fn symbol(name: &'static CStr, func: *mut c_void, signature: &'static CStr) -> sys::NativeSymbol {
    sys::NativeSymbol {
        symbol: name.as_ptr(),
        func_ptr: func,
        signature: signature.as_ptr(),
        attachment: ptr::null_mut(),
    }
}

fn register_module(module: &'static CStr, symbols: Vec<sys::NativeSymbol>) -> Result<(), String> {
    // WAMR keeps (and sorts in place) the array for the life of the process.
    let symbols: &'static mut [sys::NativeSymbol] = Vec::leak(symbols);
    // SAFETY: the runtime is initialised; the module name, the array and the strings in it
    // are 'static; each function matches its signature string.
    let ok = unsafe {
        sys::wasm_runtime_register_natives(
            module.as_ptr(),
            symbols.as_mut_ptr(),
            symbols.len() as u32,
        )
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "registering native functions for {module:?} failed"
        ))
    }
}

/// WAMR's own WASI function `name`, to delegate to.
fn wasi_native(name: &CStr) -> Result<*mut c_void, String> {
    let mut apis: *mut sys::NativeSymbol = ptr::null_mut();
    // SAFETY: WAMR points `apis` at its static table of WASI natives and returns its length.
    let count = unsafe { sys::get_libc_wasi_export_apis(&mut apis) };
    if apis.is_null() {
        return Err("WAMR has no WASI natives".into());
    }
    // SAFETY: `apis` points at `count` initialised entries that live for the process.
    let apis = unsafe { slice::from_raw_parts(apis, count as usize) };
    apis.iter()
        // SAFETY: every entry's symbol is a static NUL-terminated name.
        .find(|api| !api.symbol.is_null() && unsafe { CStr::from_ptr(api.symbol) } == name)
        .map(|api| api.func_ptr)
        .filter(|func| !func.is_null())
        .ok_or_else(|| format!("WAMR's WASI has no {name:?}"))
}

/// The activation's host state, from the instance's custom data.
///
/// # Safety
/// `inst` must be an instance created by `Instance::new` and still running; its custom data
/// is then a `HostState` that outlives the instance (or null for an instance made elsewhere).
unsafe fn host_of<'a>(inst: sys::wasm_module_inst_t) -> Option<&'a HostState> {
    // SAFETY: per the function's contract.
    let data = unsafe { sys::wasm_runtime_get_custom_data(inst) }.cast::<HostState>();
    // SAFETY: non-null custom data is always a live `HostState` (see above).
    unsafe { data.as_ref() }
}

/// Guest memory `[offset, offset + len)` as a native pointer, if entirely in bounds.
///
/// # Safety
/// `inst` must be the live instance running on this thread.
unsafe fn guest_ptr(inst: sys::wasm_module_inst_t, offset: u32, len: u32) -> Option<*mut u8> {
    // SAFETY: per the contract; WAMR checks the range against the current memory size.
    unsafe {
        sys::wasm_runtime_validate_app_addr(inst, u64::from(offset), u64::from(len))
            .then(|| sys::wasm_runtime_addr_app_to_native(inst, u64::from(offset)).cast::<u8>())
    }
}

/// Raises a trap in the guest with `message`.
///
/// # Safety
/// `inst` must be the live instance running on this thread.
unsafe fn trap(inst: sys::wasm_module_inst_t, message: &CStr) {
    // SAFETY: per the contract; WAMR copies the message.
    unsafe { sys::wasm_runtime_set_exception(inst, message.as_ptr()) };
}

/// [`trap`] with the HTTP import's fault as the message.
///
/// SAFETY: as for [`trap`].
unsafe fn trap_with(inst: sys::wasm_module_inst_t, fault: HttpImportFault) {
    // The faults' messages hold no NUL.
    let message = std::ffi::CString::new(fault.to_string()).unwrap_or_default();
    // SAFETY: per the contract.
    unsafe { trap(inst, &message) };
}

/// WASI `fd_write` with stdout and stderr captured: at most [`MAX_IOVECS`] iovecs (on every
/// descriptor) and [`MAX_IO_BYTES`] captured per call (a partial write, as WASI allows).
///
/// SAFETY (for WAMR): called by WAMR on the guest's thread with the running instance's
/// execution environment; the pointer arguments were checked by WAMR to point into guest memory
/// (one byte each, per the `*` signature) and converted to native pointers.
unsafe extern "C" fn fd_write(
    exec_env: sys::wasm_exec_env_t,
    fd: u32,
    iovs: *const GuestIovec,
    iovs_len: u32,
    nwritten: *mut u32,
) -> u32 {
    // SAFETY: `exec_env` is the running guest's (see above).
    let inst = unsafe { sys::wasm_runtime_get_module_inst(exec_env) };
    // SAFETY: `inst` is the running instance on this thread.
    let host = unsafe { host_of(inst) };
    if iovs_len > MAX_IOVECS {
        return ERRNO_INVAL;
    }
    let (Some(host), 1 | 2) = (host, fd) else {
        // Set at registration, before any guest could call this.
        let Some(originals) = WASI_ORIGINALS.get() else {
            return ERRNO_NOSYS;
        };
        // SAFETY: WAMR's own `fd_write`, with the arguments WAMR passed, untouched.
        return unsafe { (originals.fd_write)(exec_env, fd, iovs, iovs_len, nwritten) };
    };
    let table_bytes = u64::from(iovs_len) * std::mem::size_of::<GuestIovec>() as u64;
    // SAFETY: WAMR checks that each whole range lies in the guest's memory.
    let in_bounds = unsafe {
        sys::wasm_runtime_validate_native_addr(inst, iovs.cast_mut().cast(), table_bytes)
            && sys::wasm_runtime_validate_native_addr(inst, nwritten.cast(), 4)
    };
    if !in_bounds {
        return ERRNO_FAULT;
    }
    let mut buffers = Vec::with_capacity(iovs_len as usize);
    let mut total: u32 = 0;
    for index in 0..iovs_len as usize {
        // SAFETY: inside the validated table; guest memory need not be aligned.
        let iov = unsafe { ptr::read_unaligned(iovs.add(index)) };
        let offset = u32::from_le(iov.offset);
        let len = u32::from_le(iov.len).min(MAX_IO_BYTES - total);
        total += len;
        // SAFETY: `inst` is the running instance.
        match unsafe { guest_ptr(inst, offset, len) } {
            Some(data) => buffers.push((data, len)),
            None => return ERRNO_FAULT,
        }
    }
    let mut written: u32 = 0;
    for (data, len) in buffers {
        // SAFETY: validated above to lie in guest memory, which nothing else touches while
        // the guest is paused in this call.
        host.write_output(fd, unsafe { slice::from_raw_parts(data, len as usize) });
        written = written.saturating_add(len);
    }
    // SAFETY: validated above (4 bytes); guest memory need not be aligned.
    unsafe { ptr::write_unaligned(nwritten, written.to_le()) };
    0
}

/// WASI `random_get`, a chunk at a time: past the deadline it stops (WAMR's watchdog has then
/// marked the instance terminated, which ends it as soon as the call returns), so a gigabyte
/// holds the thread no longer than the activation's limit.
///
/// SAFETY (for WAMR): called on the guest's thread; `(*~)` made WAMR check that `buf` and
/// the `len` bytes after it lie in guest memory and convert it to a native pointer.
unsafe extern "C" fn random_get(exec_env: sys::wasm_exec_env_t, buf: *mut u8, len: u32) -> u32 {
    // SAFETY: `exec_env` is the running guest's.
    let inst = unsafe { sys::wasm_runtime_get_module_inst(exec_env) };
    // SAFETY: `inst` is the running instance on this thread.
    let host = unsafe { host_of(inst) };
    if len == 0 {
        return 0;
    }
    // SAFETY: checked by WAMR to lie in guest memory (see above), which nothing else touches
    // while the guest is paused in this call.
    let buffer = unsafe { slice::from_raw_parts_mut(buf, len as usize) };
    for (index, chunk) in buffer.chunks_mut(RANDOM_CHUNK).enumerate() {
        if index > 0 && host.is_some_and(HostState::past_deadline) {
            return 0;
        }
        if getrandom::getrandom(chunk).is_err() {
            return ERRNO_IO;
        }
    }
    0
}

/// WASI `path_open` as WAMR implements it, behind the count of what the guest holds: beyond
/// [`MAX_GUEST_OPENED`] descriptors it is `EMFILE`, as on the other backends.
///
/// SAFETY (for WAMR): called on the guest's thread; the pointers were checked by WAMR to point
/// into guest memory (`*~`: the path and its length; `*`: four bytes for the descriptor).
#[allow(clippy::too_many_arguments, reason = "WASI's signature")]
unsafe extern "C" fn path_open(
    exec_env: sys::wasm_exec_env_t,
    dirfd: u32,
    dirflags: u32,
    path: *const u8,
    path_len: u32,
    oflags: u32,
    rights_base: u64,
    rights_inheriting: u64,
    fdflags: u32,
    opened: *mut u32,
) -> u32 {
    let Some(originals) = WASI_ORIGINALS.get() else {
        return ERRNO_NOSYS;
    };
    // SAFETY: `exec_env` is the running guest's; `inst` the running instance on this thread.
    let host = unsafe { host_of(sys::wasm_runtime_get_module_inst(exec_env)) };
    if host.is_some_and(|host| !host.opened().has_room()) {
        return u32::from(ERRNO_MFILE);
    }
    // SAFETY: WAMR's own `path_open`, with the arguments WAMR passed, untouched.
    let errno = unsafe {
        (originals.path_open)(
            exec_env,
            dirfd,
            dirflags,
            path,
            path_len,
            oflags,
            rights_base,
            rights_inheriting,
            fdflags,
            opened,
        )
    };
    if errno == 0
        && let Some(host) = host
    {
        // SAFETY: checked by WAMR (see above); guest memory need not be aligned.
        host.opened()
            .opened(u32::from_le(unsafe { ptr::read_unaligned(opened) }));
    }
    errno
}

/// WASI `fd_close` as WAMR implements it, forgetting the descriptor in the count.
///
/// SAFETY (for WAMR): called on the guest's thread.
unsafe extern "C" fn fd_close(exec_env: sys::wasm_exec_env_t, fd: u32) -> u32 {
    let Some(originals) = WASI_ORIGINALS.get() else {
        return ERRNO_NOSYS;
    };
    // SAFETY: WAMR's own `fd_close` with WAMR's arguments; `inst` is the running instance.
    let (errno, host) = unsafe {
        (
            (originals.fd_close)(exec_env, fd),
            host_of(sys::wasm_runtime_get_module_inst(exec_env)),
        )
    };
    if errno == 0
        && let Some(host) = host
    {
        host.opened().closed(fd);
    }
    errno
}

/// WASI `fd_renumber` as WAMR implements it: `to` is closed, `from` goes by its number.
///
/// SAFETY (for WAMR): called on the guest's thread.
unsafe extern "C" fn fd_renumber(exec_env: sys::wasm_exec_env_t, from: u32, to: u32) -> u32 {
    let Some(originals) = WASI_ORIGINALS.get() else {
        return ERRNO_NOSYS;
    };
    // SAFETY: WAMR's own `fd_renumber` with WAMR's arguments; `inst` is the running instance.
    let (errno, host) = unsafe {
        (
            (originals.fd_renumber)(exec_env, from, to),
            host_of(sys::wasm_runtime_get_module_inst(exec_env)),
        )
    };
    if errno == 0
        && let Some(host) = host
    {
        host.opened().renumbered(from, to);
    }
    errno
}

/// WASI `poll_oneoff` as WAMR implements it, run without the guest's CPU slot: it may sleep
/// (until the earliest clock; WAMR wakes it when the watchdog terminates the instance).
///
/// SAFETY (for WAMR): as for `fd_write`.
unsafe extern "C" fn poll_oneoff(
    exec_env: sys::wasm_exec_env_t,
    subscriptions: *const u8,
    events: *mut u8,
    count: u32,
    nevents: *mut u32,
) -> u32 {
    // Set at registration, before any guest could call this.
    let Some(original) = WASI_ORIGINALS.get().map(|o| o.poll_oneoff) else {
        return ERRNO_NOSYS;
    };
    // SAFETY: `exec_env` is the running guest's.
    let inst = unsafe { sys::wasm_runtime_get_module_inst(exec_env) };
    // SAFETY: `inst` is the running instance on this thread; the call below is WAMR's own,
    // with WAMR's arguments.
    unsafe {
        match host_of(inst) {
            Some(host) => {
                host.off_cpu(|| original(exec_env, subscriptions, events, count, nevents))
            }
            None => original(exec_env, subscriptions, events, count, nevents),
        }
    }
}

/// `openwhisk::http_get(url_ptr, url_len, status_ptr, len_ptr) -> result`.
///
/// SAFETY (for WAMR): called on the guest's thread with the running instance's environment.
unsafe extern "C" fn http_get(
    exec_env: sys::wasm_exec_env_t,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> i32 {
    // SAFETY: as this function's.
    unsafe {
        get(
            exec_env,
            Pair::Capability,
            url_ptr,
            url_len,
            status_ptr,
            len_ptr,
        )
    }
}

/// `openwhisk::http_try_get`, `http_get`'s twin for every module.
///
/// SAFETY (for WAMR): called on the guest's thread with the running instance's environment.
unsafe extern "C" fn http_try_get(
    exec_env: sys::wasm_exec_env_t,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> i32 {
    // SAFETY: as this function's.
    unsafe { get(exec_env, Pair::Twin, url_ptr, url_len, status_ptr, len_ptr) }
}

/// A GET through `pair`.
///
/// SAFETY: called on the guest's thread with the running instance's environment.
unsafe fn get(
    exec_env: sys::wasm_exec_env_t,
    pair: Pair,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> i32 {
    // SAFETY: see above.
    let inst = unsafe { sys::wasm_runtime_get_module_inst(exec_env) };
    // SAFETY: `inst` is the running instance on this thread (for every use below).
    unsafe {
        let allowed = |host: &&HostState| host.has_net() || pair == Pair::Twin;
        let Some(host) = host_of(inst).filter(allowed) else {
            trap_with(inst, HttpImportFault::NoCapability);
            return 0;
        };
        if let Err(fault) = http_import::check_url_len(url_len) {
            trap_with(inst, fault);
            return 0;
        }
        let Some(url) = guest_ptr(inst, url_ptr, url_len) else {
            trap_with(inst, HttpImportFault::UrlOutOfBounds);
            return 0;
        };
        let (Some(status_out), Some(len_out)) =
            (guest_ptr(inst, status_ptr, 4), guest_ptr(inst, len_ptr, 4))
        else {
            trap_with(inst, HttpImportFault::ReplyOutOfBounds);
            return 0;
        };
        let url = http_import::url_text(slice::from_raw_parts(url, url_len as usize));
        let reply = match host.http_get(&url, pair) {
            Ok(reply) => reply,
            Err(fault) => {
                trap_with(inst, fault);
                return 0;
            }
        };
        // No guest code ran during the request, so memory has not moved or shrunk.
        ptr::write_unaligned(status_out.cast::<u32>(), reply.status.to_le());
        ptr::write_unaligned(len_out.cast::<u32>(), reply.body_len.to_le());
        reply.result
    }
}

/// `openwhisk::http_read(buf_ptr, buf_len) -> bytes read`.
///
/// SAFETY (for WAMR): called on the guest's thread with the running instance's environment.
unsafe extern "C" fn http_read(exec_env: sys::wasm_exec_env_t, buf_ptr: u32, buf_len: u32) -> i32 {
    // SAFETY: as this function's.
    unsafe { read(exec_env, Pair::Capability, buf_ptr, buf_len) }
}

/// `openwhisk::http_try_read`, `http_read`'s twin for every module.
///
/// SAFETY (for WAMR): called on the guest's thread with the running instance's environment.
unsafe extern "C" fn http_try_read(
    exec_env: sys::wasm_exec_env_t,
    buf_ptr: u32,
    buf_len: u32,
) -> i32 {
    // SAFETY: as this function's.
    unsafe { read(exec_env, Pair::Twin, buf_ptr, buf_len) }
}

/// A read of the held body through `pair`.
///
/// SAFETY: called on the guest's thread with the running instance's environment.
unsafe fn read(exec_env: sys::wasm_exec_env_t, pair: Pair, buf_ptr: u32, buf_len: u32) -> i32 {
    // SAFETY: see above.
    let inst = unsafe { sys::wasm_runtime_get_module_inst(exec_env) };
    // SAFETY: `inst` is the running instance on this thread; the buffer is validated guest
    // memory, not otherwise referenced while the guest is paused here.
    unsafe {
        let allowed = |host: &&HostState| host.has_net() || pair == Pair::Twin;
        let Some(host) = host_of(inst).filter(allowed) else {
            trap_with(inst, HttpImportFault::NoCapability);
            return 0;
        };
        let Some(buf) = guest_ptr(inst, buf_ptr, buf_len) else {
            trap_with(inst, HttpImportFault::BufferOutOfBounds);
            return 0;
        };
        host.http_read(slice::from_raw_parts_mut(buf, buf_len as usize))
    }
}

/// WAMR's callback for a refused `memory.grow`.
///
/// SAFETY (for WAMR): called on the guest's thread with the instance whose memory did not grow.
pub unsafe extern "C" fn memory_growth_refused(
    inc_page_count: u32,
    current_memory_size: u64,
    _memory_index: u32,
    _reason: sys::enlarge_memory_error_reason_t,
    instance: sys::wasm_module_inst_t,
    _exec_env: sys::wasm_exec_env_t,
    _user_data: *mut c_void,
) {
    // SAFETY: `instance` is running on this thread (see above).
    if let Some(host) = unsafe { host_of(instance) } {
        host.memory_growth_refused(current_memory_size, inc_page_count);
    }
}

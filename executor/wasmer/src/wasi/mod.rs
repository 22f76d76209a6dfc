//! WASI preview 1 (`wasi_snapshot_preview1`) for the wasmer backend: the same guest ABI the
//! wasmtime backend offers through wasmtime-wasi, implemented here over `cap-std` so that a
//! granted directory is a capability the guest cannot leave (`..` and symlinks included).
//!
//! Every function of preview 1 is provided, so any WASI command links; sockets, signals and
//! descriptor-rights narrowing answer `ENOTSUP`/`ENOSYS` as a sandbox without them would.

mod fd_calls;
mod fds;
mod path_calls;
mod proc_calls;

use std::sync::Arc;

use anyhow::Context as _;
use wasmer::{Function, FunctionEnv, FunctionEnvMut, Memory, Store};

use self::{
    abi::WasiResult,
    fds::FdTable,
    guest::{Guest, LinearMemory, OutOfBounds},
};
use super::{deadline::RunClock, stop::HostStop};
use wasm_executor::backend::wasi::{abi, guest};
use wasm_executor::{
    backend::Activation, capability::dir::GrantedDir, logs::OutputCapture, pool::CpuSlot,
};

/// The import module of WASI preview 1.
pub const MODULE: &str = "wasi_snapshot_preview1";

/// What the store data of an activation gives the WASI functions.
pub trait WasiEnv: Send + 'static {
    fn clock(&self) -> &Arc<RunClock>;
    fn wasi_parts(&mut self) -> WasiParts<'_>;
}

/// The parts of an activation's state the WASI functions work with.
pub struct WasiParts<'a> {
    /// The exported memory, once instantiated.
    pub memory: Option<&'a Memory>,
    pub ctx: &'a mut WasiCtx,
    /// The guest's CPU slot, given back while a call waits.
    pub cpu: &'a mut CpuSlot,
}

/// One activation's WASI state: arguments, environment, stdin, captured output, descriptors.
pub struct WasiCtx {
    args: Vec<String>,
    env: Vec<String>,
    stdin: Vec<u8>,
    stdin_read: usize,
    output: Arc<OutputCapture>,
    fds: FdTable,
}

impl WasiCtx {
    /// The context of `activation`; the granted `dir` (the directory opened at /init) is
    /// preopened at its guest path.
    pub fn new(activation: &Activation, dir: Option<&GrantedDir>) -> anyhow::Result<Self> {
        let preopen = match dir {
            Some(granted) => {
                let fd = granted
                    .fd()
                    .try_clone_to_owned()
                    .with_context(|| format!("opening the granted {}", granted.guest_path()))?;
                let dir = cap_std::fs::Dir::from_std_file(std::fs::File::from(fd));
                Some((dir, granted.guest_path().to_owned()))
            }
            None => None,
        };
        Ok(WasiCtx {
            args: vec![activation.program_name.clone(), activation.params.clone()],
            env: activation
                .env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            stdin: activation.params.clone().into_bytes(),
            stdin_read: 0,
            output: Arc::clone(&activation.output),
            fds: FdTable::new(preopen),
        })
    }

    /// A context for probing import types at /init; it is never run.
    pub fn probe() -> Self {
        WasiCtx {
            args: Vec::new(),
            env: Vec::new(),
            stdin: Vec::new(),
            stdin_read: 0,
            output: OutputCapture::new(0, 0),
            fds: FdTable::new(None),
        }
    }
}

/// A guest's memory as wasmer shows it, for the shared guest-memory decoding.
struct WasmerMemory<'a>(wasmer::MemoryView<'a>);

impl LinearMemory for WasmerMemory<'_> {
    fn read(&self, at: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        self.0.read(at, buf).map_err(|_| OutOfBounds)
    }

    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), OutOfBounds> {
        self.0.write(at, bytes).map_err(|_| OutOfBounds)
    }
}

/// What a WASI function body works with: the context and the guest's memory.
pub struct WasiCall<'a> {
    pub ctx: &'a mut WasiCtx,
    pub guest: Guest<'a>,
    /// The guest's CPU slot, given back while a call waits.
    pub cpu: &'a mut CpuSlot,
}

/// Runs a WASI function body: checks the activation's deadline around it (see `deadline.rs`
/// for why host functions stop late guests themselves), gives it the guest's memory, and turns
/// its result into the errno the guest receives.
fn call<E: WasiEnv>(
    fenv: &mut FunctionEnvMut<'_, E>,
    body: impl FnOnce(&mut WasiCall<'_>) -> WasiResult<()>,
) -> Result<i32, HostStop> {
    let clock = Arc::clone(fenv.data().clock());
    clock.enter()?;
    let (data, store) = fenv.data_and_store_mut();
    let WasiParts { memory, ctx, cpu } = data.wasi_parts();
    let Some(memory) = memory else {
        clock.leave()?;
        return Err(HostStop::Fault(
            "WASI needs the module to export its memory as `memory`".into(),
        ));
    };
    let view = WasmerMemory(memory.view(&store));
    let mut wasi_call = WasiCall {
        ctx,
        guest: Guest::new(&view),
        cpu,
    };
    let result = body(&mut wasi_call);
    clock.leave()?;
    Ok(match result {
        Ok(()) => 0,
        Err(errno) => i32::from(errno.0),
    })
}

/// Builds the host function `wasi_snapshot_preview1::<name>` of one store, or `None` when
/// preview 1 has no such function.
pub fn function<E: WasiEnv>(
    store: &mut Store,
    env: &FunctionEnv<E>,
    name: &str,
) -> Option<Function> {
    macro_rules! wasi {
        ($body:path, $($arg:ident : $ty:ty),*) => {
            Function::new_typed_with_env(store, env, |mut fenv: FunctionEnvMut<'_, E>, $($arg: $ty),*| {
                call(&mut fenv, |wasi| $body(wasi, $($arg),*))
            })
        };
    }
    use self::{fd_calls as fd, path_calls as path, proc_calls as proc};
    Some(match name {
        "args_get" => wasi!(proc::args_get, argv: u32, buf: u32),
        "args_sizes_get" => wasi!(proc::args_sizes_get, count: u32, size: u32),
        "environ_get" => wasi!(proc::environ_get, environ: u32, buf: u32),
        "environ_sizes_get" => wasi!(proc::environ_sizes_get, count: u32, size: u32),
        "clock_res_get" => wasi!(proc::clock_res_get, id: u32, out: u32),
        "clock_time_get" => wasi!(proc::clock_time_get, id: u32, precision: u64, out: u32),
        "random_get" => Function::new_typed_with_env(
            store,
            env,
            |mut fenv: FunctionEnvMut<'_, E>, buf: u32, len: u32| {
                let deadline = fenv.data().clock().deadline();
                call(&mut fenv, |wasi| proc::random_get(wasi, deadline, buf, len))
            },
        ),
        "poll_oneoff" => Function::new_typed_with_env(
            store,
            env,
            |mut fenv: FunctionEnvMut<'_, E>, subs: u32, events: u32, count: u32, out: u32| {
                let deadline = fenv.data().clock().deadline();
                call(&mut fenv, |wasi| {
                    proc::poll_oneoff(wasi, deadline, subs, events, count, out)
                })
            },
        ),
        "sched_yield" => wasi!(proc::sched_yield,),
        "proc_raise" => wasi!(proc::unsupported_1, _signal: u32),
        "proc_exit" => Function::new_typed_with_env(
            store,
            env,
            |_fenv: FunctionEnvMut<'_, E>, code: i32| -> Result<(), HostStop> {
                Err(HostStop::Exit(code))
            },
        ),
        "sock_accept" => wasi!(proc::unsupported_3, _fd: u32, _flags: u32, _out: u32),
        "sock_recv" => {
            wasi!(proc::unsupported_6, _fd: u32, _a: u32, _b: u32, _c: u32, _d: u32, _e: u32)
        }
        "sock_send" => wasi!(proc::unsupported_5, _fd: u32, _a: u32, _b: u32, _c: u32, _d: u32),
        "sock_shutdown" => wasi!(proc::unsupported_2, _fd: u32, _how: u32),
        "fd_advise" => wasi!(fd::fd_advise, fd: u32, offset: u64, len: u64, advice: u32),
        "fd_allocate" => wasi!(fd::fd_allocate, fd: u32, offset: u64, len: u64),
        "fd_close" => wasi!(fd::fd_close, fd: u32),
        "fd_datasync" => wasi!(fd::fd_datasync, fd: u32),
        "fd_fdstat_get" => wasi!(fd::fd_fdstat_get, fd: u32, out: u32),
        "fd_fdstat_set_flags" => wasi!(fd::fd_fdstat_set_flags, fd: u32, flags: u32),
        "fd_fdstat_set_rights" => {
            wasi!(fd::fd_fdstat_set_rights, fd: u32, base: u64, inheriting: u64)
        }
        "fd_filestat_get" => wasi!(fd::fd_filestat_get, fd: u32, out: u32),
        "fd_filestat_set_size" => wasi!(fd::fd_filestat_set_size, fd: u32, size: u64),
        "fd_filestat_set_times" => {
            wasi!(fd::fd_filestat_set_times, fd: u32, atim: u64, mtim: u64, flags: u32)
        }
        "fd_pread" => wasi!(fd::fd_pread, fd: u32, iovs: u32, len: u32, offset: u64, out: u32),
        "fd_prestat_get" => wasi!(fd::fd_prestat_get, fd: u32, out: u32),
        "fd_prestat_dir_name" => wasi!(fd::fd_prestat_dir_name, fd: u32, buf: u32, len: u32),
        "fd_pwrite" => wasi!(fd::fd_pwrite, fd: u32, iovs: u32, len: u32, offset: u64, out: u32),
        "fd_read" => wasi!(fd::fd_read, fd: u32, iovs: u32, len: u32, out: u32),
        "fd_readdir" => wasi!(fd::fd_readdir, fd: u32, buf: u32, len: u32, cookie: u64, out: u32),
        "fd_renumber" => wasi!(fd::fd_renumber, from: u32, to: u32),
        "fd_seek" => wasi!(fd::fd_seek, fd: u32, offset: i64, whence: u32, out: u32),
        "fd_sync" => wasi!(fd::fd_sync, fd: u32),
        "fd_tell" => wasi!(fd::fd_tell, fd: u32, out: u32),
        "fd_write" => wasi!(fd::fd_write, fd: u32, iovs: u32, len: u32, out: u32),
        "path_create_directory" => wasi!(path::path_create_directory, fd: u32, path: u32, len: u32),
        "path_filestat_get" => {
            wasi!(path::path_filestat_get, fd: u32, flags: u32, path: u32, len: u32, out: u32)
        }
        "path_filestat_set_times" => wasi!(
            path::path_filestat_set_times,
            fd: u32, flags: u32, path: u32, len: u32, atim: u64, mtim: u64, fst: u32
        ),
        "path_link" => wasi!(
            path::path_link,
            old_fd: u32, flags: u32, old: u32, old_len: u32, new_fd: u32, new: u32, new_len: u32
        ),
        "path_open" => wasi!(
            path::path_open,
            fd: u32, dirflags: u32, path: u32, len: u32, oflags: u32, base: u64, inheriting: u64, fdflags: u32, out: u32
        ),
        "path_readlink" => {
            wasi!(path::path_readlink, fd: u32, path: u32, len: u32, buf: u32, buf_len: u32, out: u32)
        }
        "path_remove_directory" => wasi!(path::path_remove_directory, fd: u32, path: u32, len: u32),
        "path_rename" => {
            wasi!(path::path_rename, fd: u32, old: u32, old_len: u32, new_fd: u32, new: u32, new_len: u32)
        }
        "path_symlink" => {
            wasi!(path::path_symlink, old: u32, old_len: u32, fd: u32, new: u32, new_len: u32)
        }
        "path_unlink_file" => wasi!(path::path_unlink_file, fd: u32, path: u32, len: u32),
        _ => return None,
    })
}

//! One activation's instance: instantiated from the shared module with this activation's WASI
//! arguments, environment, preopen, stdio and memory maximum, its entry point called once, then
//! destroyed — all on the worker thread. Only [`Terminator`] crosses threads.

use std::{
    ffi::{CStr, CString, c_char, c_void},
    marker::PhantomData,
    os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd},
    ptr::{self, NonNull},
    sync::{Arc, Mutex},
};

use wamr_runtime_sys as sys;

use super::{LoadedModule, ThreadEnv, module::c_text};
use crate::host::HostState;

/// What one instance is given besides its module and host state.
pub struct InstanceConfig<'a> {
    pub argv: &'a [&'a str],
    pub env: &'a [(String, String)],
    /// The granted directory: the guest's path and the directory, open.
    pub dir: Option<(&'a str, BorrowedFd<'a>)>,
    pub stdin: BorrowedFd<'a>,
    pub stdout: BorrowedFd<'a>,
    pub stderr: BorrowedFd<'a>,
    /// The interpreter's operand and frame stack (AOT code runs on the thread's stack).
    pub stack_bytes: u32,
}

/// The WASI descriptor of the granted directory: the first after stdin, stdout and stderr.
const PREOPEN_FD: u32 = 3;

/// The start of WAMR's `WASIContext` (`wasm_runtime_common.h` of the pinned WAMR): its
/// descriptor table and its table of preopened directories.
#[repr(C)]
struct WasiTables {
    curfds: *mut c_void,
    prestats: *mut c_void,
}

unsafe extern "C" {
    /// The instance's `WASIContext`, or null.
    fn wasm_runtime_get_wasi_ctx(inst: sys::wasm_module_inst_t) -> *mut WasiTables;
    /// Puts the host descriptor `out` into the table under `fd` (WAMR's libc-wasi).
    fn fd_table_insert_existing(ft: *mut c_void, fd: u32, out: i32, is_stdio: bool) -> bool;
    /// Records `fd` as a preopened directory the guest knows as `dir` (copied).
    fn fd_prestats_insert(pt: *mut c_void, dir: *const c_char, fd: u32) -> bool;
}

/// The instance's WASI tables.
///
/// # Safety
/// `inst` must be a live instance.
unsafe fn wasi_tables(inst: sys::wasm_module_inst_t) -> Option<WasiTables> {
    // SAFETY: per the contract; the context, when there is one, starts with the two tables.
    unsafe {
        let ctx = wasm_runtime_get_wasi_ctx(inst);
        ctx.as_ref().map(|ctx| WasiTables {
            curfds: ctx.curfds,
            prestats: ctx.prestats,
        })
    }
}

/// How the entry call ended.
#[derive(Debug)]
pub enum CallOutcome {
    /// Returned normally; the first result when it is an i32.
    Returned(Option<i32>),
    /// Trapped, exited through WASI or was terminated: WAMR's exception text.
    Failed(String),
}

pub struct Instance<'a> {
    pub(super) raw: NonNull<sys::WASMModuleInstanceCommon>,
    terminator: Terminator,
    /// The module, the host state (WAMR holds a pointer to it as custom data) and this thread's
    /// environment all outlive the instance; the raw pointer keeps it on this thread.
    _borrows: PhantomData<(&'a LoadedModule, &'a HostState, &'a ThreadEnv)>,
}

impl<'a> Instance<'a> {
    pub fn new(
        _env: &'a ThreadEnv,
        module: &'a LoadedModule,
        host: &'a HostState,
        config: &InstanceConfig<'_>,
    ) -> Result<Self, String> {
        let argv = c_strings(config.argv.iter().copied(), "argument")?;
        let env = c_strings(
            config.env.iter().map(|(k, v)| format!("{k}={v}")),
            "environment variable",
        )?;
        let mut argv_ptrs: Vec<*mut c_char> = argv.iter().map(|s| s.as_ptr().cast_mut()).collect();
        let mut env_ptrs: Vec<*const c_char> = env.iter().map(|s| s.as_ptr()).collect();
        let args = Args::new()?;
        let host_ptr = ptr::from_ref(host).cast_mut().cast::<c_void>();
        let mut error = [0 as c_char; 256];
        // SAFETY: `args` is live; every pointer handed over (strings, arrays, `host`) stays
        // valid until `wasm_runtime_instantiate_ex2` returns, which copies the WASI data; WAMR
        // keeps only `host_ptr`, as custom data, and `host` outlives the instance (`'a`). The
        // descriptors stay open for the whole run (borrowed for longer than the instance).
        let raw = unsafe {
            sys::wasm_runtime_instantiation_args_set_default_stack_size(args.0, config.stack_bytes);
            sys::wasm_runtime_instantiation_args_set_host_managed_heap_size(args.0, 0);
            sys::wasm_runtime_instantiation_args_set_max_memory_pages(
                args.0,
                host.memory_limit_pages(),
            );
            sys::wasm_runtime_instantiation_args_set_custom_data(args.0, host_ptr);
            sys::wasm_runtime_instantiation_args_set_wasi_arg(
                args.0,
                argv_ptrs.as_mut_ptr(),
                len_i32(argv_ptrs.len())?,
            );
            sys::wasm_runtime_instantiation_args_set_wasi_env(
                args.0,
                env_ptrs.as_mut_ptr(),
                len_u32(env_ptrs.len())?,
            );
            sys::wasm_runtime_instantiation_args_set_wasi_stdio(
                args.0,
                i64::from(config.stdin.as_raw_fd()),
                i64::from(config.stdout.as_raw_fd()),
                i64::from(config.stderr.as_raw_fd()),
            );
            sys::wasm_runtime_instantiate_ex2(
                module.raw(),
                args.0,
                error.as_mut_ptr(),
                error.len() as u32,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| c_text(&error))?;
        let instance = Instance {
            raw,
            terminator: Terminator(Arc::new(Mutex::new(Some(RawInstance(raw))))),
            _borrows: PhantomData,
        };
        if let Some((guest, dir)) = config.dir {
            instance.preopen(guest, dir)?;
        }
        Ok(instance)
    }

    /// Gives the guest `dir` at `guest` as WASI descriptor 3, the first after stdio: a copy of
    /// the descriptor opened at /init goes into WAMR's table as it is, so no path is looked up
    /// again (WAMR's own preopens are paths, resolved at each instantiation).
    fn preopen(&self, guest: &str, dir: BorrowedFd<'_>) -> Result<(), String> {
        let guest =
            CString::new(guest).map_err(|_| format!("the guest path {guest:?} holds NUL"))?;
        let copy = dir
            .try_clone_to_owned()
            .map_err(|e| format!("copying the granted directory's descriptor: {e}"))?;
        // SAFETY: the instance is live and was made with WASI, so its WASI context exists and
        // starts with its descriptor and preopen tables (see `wasi_tables`).
        let tables =
            unsafe { wasi_tables(self.raw.as_ptr()) }.ok_or("the instance has no WASI context")?;
        let raw_fd = copy.into_raw_fd();
        // SAFETY: the tables are the instance's; once inserted, WAMR owns the descriptor (and
        // closes it with the instance); the guest path is copied.
        let taken = unsafe { fd_table_insert_existing(tables.curfds, PREOPEN_FD, raw_fd, false) };
        if !taken {
            // SAFETY: not taken, so still ours alone.
            drop(unsafe { OwnedFd::from_raw_fd(raw_fd) });
            return Err("WAMR could not take the granted directory".into());
        }
        // SAFETY: as above.
        if unsafe { fd_prestats_insert(tables.prestats, guest.as_ptr(), PREOPEN_FD) } {
            Ok(())
        } else {
            Err("WAMR could not record the granted directory".into())
        }
    }

    /// The size of the default linear memory, if the module has one.
    pub fn memory_bytes(&self) -> Option<u64> {
        // SAFETY: `self.raw` is a live instance of this thread; the memory belongs to it.
        unsafe {
            let memory = sys::wasm_runtime_get_default_memory(self.raw.as_ptr());
            if memory.is_null() {
                return None;
            }
            Some(
                sys::wasm_memory_get_cur_page_count(memory)
                    * sys::wasm_memory_get_bytes_per_page(memory),
            )
        }
    }

    /// A handle the watchdog may use, from its thread, to stop this instance.
    pub fn terminator(&self) -> Terminator {
        self.terminator.clone()
    }

    /// Calls the exported function `entry` (no parameters) and waits for it.
    pub fn call(&self, entry: &str) -> CallOutcome {
        let Ok(name) = CString::new(entry) else {
            return CallOutcome::Failed(format!("invalid entry point name {entry:?}"));
        };
        let inst = self.raw.as_ptr();
        // SAFETY: `inst` is live and used on its own thread; `name` outlives the call.
        let func = unsafe { sys::wasm_runtime_lookup_function(inst, name.as_ptr()) };
        if func.is_null() {
            return CallOutcome::Failed(format!("the entry point `{entry}` vanished"));
        }
        // SAFETY: as above; the singleton lives as long as the instance.
        let exec_env = unsafe { sys::wasm_runtime_get_exec_env_singleton(inst) };
        if exec_env.is_null() {
            return CallOutcome::Failed("creating the execution environment failed".into());
        }
        // SAFETY: `func` belongs to `inst`.
        let result_count = unsafe { sys::wasm_func_get_result_count(func, inst) };
        let mut results = vec![sys::wasm_val_t::default(); result_count as usize];
        // SAFETY: `results` has room for exactly `result_count` values; no arguments. The
        // guest runs here, on this thread, until it returns, traps or is terminated.
        let ok = unsafe {
            sys::wasm_runtime_call_wasm_a(
                exec_env,
                func,
                result_count,
                results.as_mut_ptr(),
                0,
                ptr::null_mut(),
            )
        };
        if !ok {
            return CallOutcome::Failed(
                self.exception().unwrap_or_else(|| "the call failed".into()),
            );
        }
        let first = results
            .first()
            .filter(|value| value.kind == sys::WASM_I32 as u8)
            // SAFETY: the union holds an i32 when `kind` says so.
            .map(|value| unsafe { value.of.i32_ });
        CallOutcome::Returned(first)
    }

    /// WAMR's exception text, if one is pending.
    pub fn exception(&self) -> Option<String> {
        // SAFETY: live instance; the text is copied out before anything else touches it.
        let text = unsafe { sys::wasm_runtime_get_exception(self.raw.as_ptr()) };
        // SAFETY: non-null exception texts are NUL-terminated strings inside the instance.
        (!text.is_null()).then(|| {
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        })
    }

    /// The code a guest passed to WASI `proc_exit`.
    pub fn wasi_exit_code(&self) -> u32 {
        // SAFETY: live instance.
        unsafe { sys::wasm_runtime_get_wasi_exit_code(self.raw.as_ptr()) }
    }
}

impl Drop for Instance<'_> {
    fn drop(&mut self) {
        // First make the terminator inert (waiting for a terminate in progress), then destroy.
        self.terminator
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        // SAFETY: created by `new` on this thread, destroyed once; nothing refers to it now.
        unsafe { sys::wasm_runtime_deinstantiate(self.raw.as_ptr()) };
    }
}

/// Stops an instance from another thread (the watchdog). Calling it after the instance ended
/// does nothing.
#[derive(Clone)]
pub struct Terminator(Arc<Mutex<Option<RawInstance>>>);

struct RawInstance(NonNull<sys::WASMModuleInstanceCommon>);

// SAFETY: a `RawInstance` is only ever used for `wasm_runtime_terminate`, which WAMR documents
// for another thread holding the instance pointer and stopping it asynchronously (it sets the
// exception and the terminate flag the guest polls). The pointer is removed under the mutex
// before the instance is destroyed, and `terminate` holds that mutex while calling WAMR, so it
// never reaches a destroyed instance.
unsafe impl Send for RawInstance {}

impl Terminator {
    pub fn terminate(&self) {
        let guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(instance) = guard.as_ref() {
            // SAFETY: see `RawInstance`: the instance is alive while it is in the mutex.
            unsafe { sys::wasm_runtime_terminate(instance.0.as_ptr()) };
        }
    }
}

/// WAMR's instantiation arguments, destroyed on drop.
struct Args(*mut sys::InstantiationArgs2);

impl Args {
    fn new() -> Result<Self, String> {
        let mut raw = ptr::null_mut();
        // SAFETY: WAMR writes a new object's pointer into `raw`.
        if unsafe { sys::wasm_runtime_instantiation_args_create(&mut raw) } && !raw.is_null() {
            Ok(Args(raw))
        } else {
            Err("allocating instantiation arguments failed".into())
        }
    }
}

impl Drop for Args {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { sys::wasm_runtime_instantiation_args_destroy(self.0) };
    }
}

fn c_strings(
    items: impl IntoIterator<Item = impl Into<Vec<u8>>>,
    what: &str,
) -> Result<Vec<CString>, String> {
    items
        .into_iter()
        .map(|item| CString::new(item).map_err(|_| format!("a WASI {what} contains a NUL byte")))
        .collect()
}

fn len_i32(len: usize) -> Result<i32, String> {
    i32::try_from(len).map_err(|_| "too many WASI arguments".to_owned())
}

fn len_u32(len: usize) -> Result<u32, String> {
    u32::try_from(len).map_err(|_| "too many WASI entries".to_owned())
}

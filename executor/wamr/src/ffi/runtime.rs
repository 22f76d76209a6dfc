//! Process-wide WAMR set-up, done once: the runtime, its log level, the native functions the
//! executor adds or overrides, the memory-growth callback, and where guard pages check bounds
//! the allocator that makes linear memories (`linear_memory.rs`).

use std::{ptr, sync::OnceLock};

use anyhow::anyhow;
use wamr_runtime_sys as sys;

use super::{linear_memory, natives};

static INIT: OnceLock<Result<(), String>> = OnceLock::new();

/// Initialises WAMR for this process (idempotent).
pub fn init_process() -> anyhow::Result<()> {
    INIT.get_or_init(|| {
        // WAMR also prepares the calling thread for running guests. No guest runs on the
        // caller (the executor's main thread), so do it on a thread of its own that undoes
        // that before it ends.
        std::thread::Builder::new()
            .name("wamr-init".into())
            .spawn(init_on_this_thread)
            .map_err(|e| format!("starting the WAMR init thread: {e}"))?
            .join()
            .map_err(|_| "the WAMR init thread panicked".to_owned())?
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

fn init_on_this_thread() -> Result<(), String> {
    let mut args = sys::RuntimeInitArgs {
        mem_alloc_type: sys::Alloc_With_System_Allocator,
        ..Default::default()
    };
    if sys::LINEAR_MEMORIES_BY_EMBEDDER {
        let [malloc_func, realloc_func, free_func] = linear_memory::allocator();
        args.mem_alloc_type = sys::Alloc_With_Allocator;
        args.mem_alloc_option.allocator = sys::MemAllocOption__bindgen_ty_2 {
            malloc_func,
            realloc_func,
            free_func,
            user_data: ptr::null_mut(),
        };
    }
    // SAFETY: the first WAMR call of the process (INIT runs this once); `args` is fully
    // initialised (zero is WAMR's default for every other field).
    if !unsafe { sys::wasm_runtime_full_init(&mut args) } {
        return Err("initialising the WAMR runtime failed".into());
    }
    // SAFETY: the runtime is initialised. WAMR logs to stdout; keep only its errors.
    unsafe { sys::wasm_runtime_set_log_level(sys::WASM_LOG_LEVEL_ERROR) };
    natives::register()?;
    // SAFETY: a plain function pointer; WAMR calls it on the thread of a failing memory.grow.
    unsafe {
        sys::wasm_runtime_set_enlarge_mem_error_callback(
            Some(natives::memory_growth_refused),
            ptr::null_mut(),
        )
    };
    // SAFETY: `wasm_runtime_full_init` set up this thread's environment; it is torn down here,
    // before the thread ends (with the profile's stack guard pages, these would otherwise
    // outlive the thread in glibc's stack cache).
    unsafe { sys::wasm_runtime_destroy_thread_env() };
    Ok(())
}

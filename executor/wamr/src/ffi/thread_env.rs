//! WAMR's per-thread environment. With guard-page bounds checks WAMR turns a fault in a guest's
//! memory into a trap, which needs per-thread state on every thread that runs guest code (and
//! WAMR's blocking-operation signal masked outside WASI calls). Each thread that runs WAMR work
//! (a pool job's, the request's own or a pool thread) sets it up lazily on its first WAMR work
//! and tears it down when it ends.

use std::marker::PhantomData;

use wamr_runtime_sys as sys;

/// Proof that the current thread's WAMR environment is set up. Borrowed only inside
/// [`with_thread_env`], and neither `Send` nor `Sync`, so it cannot reach another thread.
pub struct ThreadEnv {
    _this_thread_only: PhantomData<*const ()>,
}

/// Owns the set-up environment of one thread.
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: runs at thread exit, on the thread whose environment `init` set up.
        unsafe { sys::wasm_runtime_destroy_thread_env() };
    }
}

thread_local! {
    static ENV: Result<Guard, String> = init();
}

fn init() -> Result<Guard, String> {
    super::init_process().map_err(|e| format!("{e:#}"))?;
    // SAFETY: the process is initialised; this sets up the calling thread only, once (the
    // thread-local runs `init` once per thread).
    if unsafe { sys::wasm_runtime_init_thread_env() } {
        Ok(Guard)
    } else {
        Err("setting up WAMR's environment on this thread failed".into())
    }
}

/// Runs `f` with this thread's WAMR environment set up (doing so on first use).
pub fn with_thread_env<R>(f: impl FnOnce(&ThreadEnv) -> R) -> Result<R, String> {
    ENV.try_with(|env| env.as_ref().map(|_| ()).map_err(Clone::clone))
        .map_err(|_| "this thread is ending".to_owned())??;
    Ok(f(&ThreadEnv {
        _this_thread_only: PhantomData,
    }))
}

//! The only code of the precompiler that calls WAMR (FFI, unsafe): the runtime in compiler
//! mode, loading the module, and WAMR's create-data → create-context → compile → emit sequence
//! with the profile's options, every WAMR resource released by a guard.

use std::{
    ffi::{CStr, CString, c_char},
    os::unix::ffi::OsStrExt,
    ptr,
};

use anyhow::{Context, bail};
use wamr_compiler_sys as sys;
use wamr_profile as profile;

use crate::target::AotTarget;

/// The `.aot` file for `wasm`; with `execute_in_place`, code that runs from a read-only mapping
/// of the file itself (WAMR's XIP).
pub fn compile(wasm: &[u8], target: &AotTarget, execute_in_place: bool) -> anyhow::Result<Vec<u8>> {
    let _runtime = Runtime::init()?;
    // WAMR prints its compiler settings on stdout, which is reserved for our one report line.
    let _quiet = StdoutSilenced::begin();
    let module = Module::load(wasm)?;

    let arch = CString::new(target.arch)?;
    let abi = CString::new(target.abi)?;
    let cpu = CString::new(target.code.model.cpu)?;
    let features = target.code.llvm_features().map(CString::new).transpose()?;
    let stack_usage = ScratchFile::new("su")?;

    // SAFETY: `module.raw` is a loaded bytecode module (compiler mode loads only bytecode);
    // `arch` is a NUL-terminated string that outlives the call.
    let data = unsafe { sys::aot_create_comp_data(module.raw.cast(), arch.as_ptr(), false) };
    if data.is_null() {
        bail!("preparing the module for compilation: {}", last_error());
    }
    let data = CompData(data);

    let mut option = sys::AOTCompOption {
        opt_level: 3,
        // WAMR's default on Linux: small code model, code placed near the runtime.
        size_level: 3,
        output_format: sys::AOT_FORMAT_FILE,
        target_arch: arch.as_ptr().cast_mut(),
        target_abi: abi.as_ptr().cast_mut(),
        target_cpu: cpu.as_ptr().cast_mut(),
        // Only the features named in the tag: LLVM is never asked for the host's.
        cpu_features: features
            .as_ref()
            .map_or(ptr::null_mut(), |s| s.as_ptr().cast_mut()),
        // With guard pages the runtime traps out-of-bounds memory accesses by signal; without
        // them the code must check every access. The native stack is checked in the code.
        bounds_checks: u32::from(!target.profile.hardware_bounds_checks),
        stack_bounds_checks: u32::from(!profile::NATIVE_STACK_GUARD_PAGES),
        // Where LLVM reports each function's frame size for the stack checks: our own scratch
        // file (WAMR's default is a temporary file in the current directory).
        stack_usage_file: stack_usage.path.as_ptr(),
        // memory.copy/fill alone are WAMR's "bulk memory opt" subset, full bulk memory includes it.
        enable_bulk_memory: profile::BULK_MEMORY,
        enable_bulk_memory_opt: profile::BULK_MEMORY,
        enable_ref_types: profile::REFERENCE_TYPES,
        // LLVM (rustc, clang) pads the table index of `call_indirect` to five bytes as soon as
        // reference types are on, its default since LLVM 19; WAMR reads a padded index only
        // with this option (WAMR's own wamrc sets it with reference types).
        enable_call_indirect_overlong: profile::CALL_INDIRECT_OVERLONG,
        enable_simd: target.profile.simd,
        enable_tail_call: profile::TAIL_CALL,
        enable_thread_mgr: profile::TERMINATION_CHECKS,
        // The guest's shadow stack (in linear memory) overflowing is a trap, not corruption.
        enable_aux_stack_check: true,
        // Execute in place (`wamrc --xip`): calls between functions through a table, and
        // LLVM's intrinsics through WAMR's helpers, so the code needs no per-load patching
        // beyond the relocations WAMR applies before the executor seals it.
        is_indirect_mode: execute_in_place,
        disable_llvm_intrinsics: execute_in_place,
        ..Default::default()
    };
    // SAFETY: `data` is live; `option` and the strings it points to outlive the call (WAMR
    // copies what it keeps).
    let context = unsafe { sys::aot_create_comp_context(data.0, &mut option) };
    if context.is_null() {
        bail!("setting up the compiler: {}", last_error());
    }
    let context = CompContext(context);
    // SAFETY: `context` is live and was created for `data`, which outlives it.
    if !unsafe { sys::aot_compile_wasm(context.0) } {
        bail!("compiling: {}", last_error());
    }
    let mut size = 0u32;
    // SAFETY: as above; `size` receives the length of the returned buffer.
    let file = unsafe { sys::aot_emit_aot_file_buf(context.0, data.0, &mut size) };
    if file.is_null() {
        bail!("writing the AOT module: {}", last_error());
    }
    // SAFETY: WAMR returned a buffer of `size` bytes, allocated with its allocator; it is
    // copied once and then freed with that allocator.
    let bytes = unsafe {
        let bytes = std::slice::from_raw_parts(file, size as usize).to_vec();
        sys::wasm_runtime_free(file.cast());
        bytes
    };
    drop(context);
    drop(data);
    drop(module);
    Ok(bytes)
}

/// WAMR's runtime in compiler mode (it also initialises LLVM's targets); destroyed on drop.
struct Runtime;

impl Runtime {
    fn init() -> anyhow::Result<Self> {
        let mut args = sys::RuntimeInitArgs {
            mem_alloc_type: sys::Alloc_With_System_Allocator,
            ..Default::default()
        };
        // SAFETY: called once per process, before any other WAMR call; `args` is fully set.
        if !unsafe { sys::wasm_runtime_full_init(&mut args) } {
            bail!("initialising WAMR's compiler runtime failed");
        }
        // SAFETY: the runtime is initialised.
        unsafe { sys::wasm_runtime_set_log_level(sys::WASM_LOG_LEVEL_ERROR) };
        Ok(Runtime)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: every module, data and context was dropped before (declaration order).
        unsafe { sys::wasm_runtime_destroy() };
    }
}

/// A loaded bytecode module and the buffer WAMR may keep pointers into.
struct Module {
    raw: sys::wasm_module_t,
    _bytes: Vec<u8>,
}

impl Module {
    fn load(wasm: &[u8]) -> anyhow::Result<Self> {
        // WAMR may rewrite the buffer in place and keeps pointers into it until unload.
        let mut bytes = wasm.to_vec();
        let size = u32::try_from(bytes.len()).context("the module is larger than 4 GiB")?;
        let mut error = [0 as c_char; 256];
        // SAFETY: `bytes` is writable, `size` long and lives in the returned `Module`, which
        // unloads the module before freeing it; `error` is a writable buffer of its length.
        let raw = unsafe {
            sys::wasm_runtime_load(
                bytes.as_mut_ptr(),
                size,
                error.as_mut_ptr(),
                error.len() as u32,
            )
        };
        if raw.is_null() {
            bail!("WAMR does not accept the module: {}", c_text(&error));
        }
        Ok(Module { raw, _bytes: bytes })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded by `Module::load`, unloaded once, before its buffer is freed.
        unsafe { sys::wasm_runtime_unload(self.raw) };
    }
}

struct CompData(sys::aot_comp_data_t);

impl Drop for CompData {
    fn drop(&mut self) {
        // SAFETY: created by `aot_create_comp_data`, destroyed once, after its context.
        unsafe { sys::aot_destroy_comp_data(self.0) };
    }
}

struct CompContext(sys::aot_comp_context_t);

impl Drop for CompContext {
    fn drop(&mut self) {
        // SAFETY: created by `aot_create_comp_context`, destroyed once.
        unsafe { sys::aot_destroy_comp_context(self.0) };
    }
}

/// A path in the temporary directory, for a file WAMR writes; removed on drop.
struct ScratchFile {
    path: CString,
}

impl ScratchFile {
    fn new(extension: &str) -> anyhow::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "wasm-precompile-wamr-{}-{nanos}.{extension}",
            std::process::id()
        ));
        Ok(ScratchFile {
            path: CString::new(path.into_os_string().into_encoded_bytes())
                .context("temporary path")?,
        })
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(self.path.as_bytes()));
        let _ = std::fs::remove_file(path);
    }
}

/// Points the process's stdout at /dev/null until dropped (C stdio flushed on both ends).
struct StdoutSilenced {
    saved: Option<libc::c_int>,
}

impl StdoutSilenced {
    fn begin() -> Self {
        // SAFETY: plain descriptor calls on this process's own stdout; every result is checked
        // and nothing is redirected when one fails.
        let saved = unsafe {
            libc::fflush(ptr::null_mut());
            let saved = libc::dup(libc::STDOUT_FILENO);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            let redirected = saved >= 0 && null >= 0 && libc::dup2(null, libc::STDOUT_FILENO) >= 0;
            if null >= 0 {
                libc::close(null);
            }
            if !redirected && saved >= 0 {
                libc::close(saved);
            }
            redirected.then_some(saved)
        };
        StdoutSilenced { saved }
    }
}

impl Drop for StdoutSilenced {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // SAFETY: `saved` is the duplicate of the original stdout made in `begin`.
            unsafe {
                libc::fflush(ptr::null_mut());
                libc::dup2(saved, libc::STDOUT_FILENO);
                libc::close(saved);
            }
        }
    }
}

fn last_error() -> String {
    // SAFETY: WAMR returns a pointer to its static, NUL-terminated last-error buffer.
    let text = unsafe { sys::aot_get_last_error() };
    if text.is_null() {
        return "unknown error".to_owned();
    }
    // SAFETY: non-null and NUL-terminated (see above); copied out immediately.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

fn c_text(buffer: &[c_char]) -> String {
    let bytes: Vec<u8> = buffer
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

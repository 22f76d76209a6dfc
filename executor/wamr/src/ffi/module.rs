//! A loaded WAMR module — bytecode for the fast interpreter or AOT code — and what the backend
//! asks of it before instantiating: its kind, imports and exports.

use std::{
    ffi::{CStr, c_char},
    ptr::NonNull,
};

use wamr_runtime_sys as sys;

use super::{ThreadEnv, code_in_place::CodeInPlace};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleKind {
    /// Portable Wasm, run by the fast interpreter.
    Bytecode,
    /// Native code from WAMR's AOT compiler.
    Aot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// A function and its parameter count.
    Func {
        params: u32,
    },
    Other,
}

#[derive(Debug, Clone)]
pub struct Import {
    pub module: String,
    pub name: String,
    /// Resolved against WASI and the executor's natives at load.
    pub linked: bool,
}

#[derive(Debug, Clone)]
pub struct Export {
    pub name: String,
    pub kind: ExportKind,
}

/// A module loaded once per container and instantiated by every run, on any pool thread.
pub struct LoadedModule {
    raw: NonNull<sys::WASMModuleCommon>,
    kind: ModuleKind,
    /// WAMR keeps pointers into the buffer it loaded from until the module is unloaded (and
    /// code that executes in place runs from it). (Its `wasm_binary_freeable` load option is
    /// not used: with it, WAMR 2.4.3 reports an AOT module's buffer as freeable yet still reads
    /// table segments from it — a freed buffer made `call_indirect` trap with "uninitialized
    /// element".) Dropped after `drop` has unloaded the module.
    buffer: LoadBuffer,
}

/// What WAMR loaded a module from.
enum LoadBuffer {
    /// A copy in 8-byte words of our own: portable Wasm, and AOT code WAMR copies into
    /// executable memory of its own.
    Words(Box<[u64]>),
    /// An AOT file whose code executes in place, in pages sealed executable after the load.
    InPlace(CodeInPlace),
}

// SAFETY: WAMR's embedding model is "load once, instantiate per worker thread" (its
// maintainers describe exactly this thread-pool use in wasm-micro-runtime discussion #2355, and
// its own thread manager instantiates one module from several threads). After
// `wasm_runtime_load` a module is only read: the fast interpreter's code is prepared and AOT
// code relocated during the load; WASI arguments are given per instance (InstantiationArgs2),
// never stored in the module. Everything mutable lives in instances, which never leave the
// thread that made them. The module is unloaded once, in `drop`, and instances borrow it, so
// none outlives it.
unsafe impl Send for LoadedModule {}
// SAFETY: as above: shared references only read the module or instantiate it.
unsafe impl Sync for LoadedModule {}

impl LoadedModule {
    /// Loads `code` (portable Wasm or a WAMR AOT module); the error is WAMR's message.
    pub fn load(_env: &ThreadEnv, code: &[u8]) -> Result<Self, String> {
        let size =
            u32::try_from(code.len()).map_err(|_| "the module is larger than 4 GiB".to_owned())?;
        // WAMR may rewrite the buffer in place and wants AOT code 4-byte aligned: copy it into
        // 8-byte words of our own.
        let mut words = vec![0u64; code.len().div_ceil(8)].into_boxed_slice();
        let bytes = words.as_mut_ptr().cast::<u8>();
        // SAFETY: `words` holds at least `code.len()` bytes; the regions do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), bytes, code.len()) };
        // WAMR's own check, on the aligned copy: it aligns its reads as if the buffer were
        // aligned, and on an unaligned slice misreads the header.
        // SAFETY: `bytes` is `size` readable bytes; WAMR only reads them.
        let in_place = unsafe { sys::wasm_runtime_is_xip_file(bytes, size) };
        let mut buffer = if in_place {
            drop(words);
            LoadBuffer::InPlace(CodeInPlace::copy_of(code)?)
        } else {
            LoadBuffer::Words(words)
        };
        let bytes = match &mut buffer {
            LoadBuffer::Words(words) => words.as_mut_ptr().cast::<u8>(),
            LoadBuffer::InPlace(pages) => pages.as_mut_ptr(),
        };
        let mut error = [0 as c_char; 256];
        // SAFETY: the thread's WAMR environment is set up (`_env`); `bytes` is writable (the
        // words are owned by `buffer`, the pages not sealed yet), `size` long and kept alive in
        // the returned value until after `wasm_runtime_unload`; `error` is a writable buffer of
        // the given length.
        let raw =
            unsafe { sys::wasm_runtime_load(bytes, size, error.as_mut_ptr(), error.len() as u32) };
        let raw = NonNull::new(raw).ok_or_else(|| c_text(&error))?;
        // SAFETY: `raw` is a loaded module.
        let kind = match unsafe { sys::wasm_runtime_get_module_package_type(raw.as_ptr()) } {
            sys::Wasm_Module_AoT => ModuleKind::Aot,
            _ => ModuleKind::Bytecode,
        };
        // From here on, dropping the value unloads the module before its buffer goes.
        let module = LoadedModule { raw, kind, buffer };
        if let LoadBuffer::InPlace(pages) = &module.buffer {
            pages.seal()?;
        }
        Ok(module)
    }

    pub fn kind(&self) -> ModuleKind {
        self.kind
    }

    pub(super) fn raw(&self) -> sys::wasm_module_t {
        self.raw.as_ptr()
    }

    pub fn imports(&self) -> Vec<Import> {
        // SAFETY: `self.raw` is a loaded module; the count bounds the indices below.
        let count = unsafe { sys::wasm_runtime_get_import_count(self.raw()) }.max(0);
        (0..count)
            .map(|index| {
                let mut import = sys::wasm_import_t::default();
                // SAFETY: `index` is in range; WAMR fills `import` with pointers to strings
                // owned by the module, copied out right away.
                unsafe { sys::wasm_runtime_get_import_type(self.raw(), index, &mut import) };
                Import {
                    module: text(import.module_name),
                    name: text(import.name),
                    linked: import.linked,
                }
            })
            .collect()
    }

    pub fn exports(&self) -> Vec<Export> {
        // SAFETY: as in `imports`.
        let count = unsafe { sys::wasm_runtime_get_export_count(self.raw()) }.max(0);
        (0..count)
            .map(|index| {
                let mut export = sys::wasm_export_t::default();
                // SAFETY: `index` is in range; the strings and the type belong to the module.
                unsafe { sys::wasm_runtime_get_export_type(self.raw(), index, &mut export) };
                let kind = if export.kind == sys::WASM_IMPORT_EXPORT_KIND_FUNC {
                    // SAFETY: for a function export the union holds its (module-owned) type.
                    let params = unsafe { sys::wasm_func_type_get_param_count(export.u.func_type) };
                    ExportKind::Func { params }
                } else {
                    ExportKind::Other
                };
                Export {
                    name: text(export.name),
                    kind,
                }
            })
            .collect()
    }
}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        // SAFETY: loaded in `load` and unloaded once; every instance borrowed the module and is
        // gone. Unloading only frees memory, so any thread may do it.
        unsafe { sys::wasm_runtime_unload(self.raw()) };
    }
}

fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: WAMR hands out NUL-terminated names that live as long as the module.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// The NUL-terminated text WAMR wrote into an error buffer.
pub(super) fn c_text(buffer: &[c_char]) -> String {
    let bytes: Vec<u8> = buffer
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

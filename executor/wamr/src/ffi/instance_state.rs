//! An instance's state for snapshots: its exported mutable globals and its default memory,
//! read after pre-initialisation, and the state each new instance starts from put in it (see
//! `wasm_executor::backend::InstanceState`).

use std::{ffi::CString, ptr::NonNull};

use wamr_runtime_sys as sys;
use wasm_executor::backend::{InstanceState, kept_memory, snapshot::GlobalValue};

use super::Instance;

impl Instance<'_> {
    /// The exported global `name`, if it is a mutable one.
    fn mutable_global(&self, name: &str) -> Option<sys::wasm_global_inst_t> {
        let name = CString::new(name).ok()?;
        let mut global = sys::wasm_global_inst_t {
            kind: 0,
            is_mutable: false,
            global_data: std::ptr::null_mut(),
        };
        // SAFETY: live instance of this thread; `name` outlives the call; WAMR fills `global`.
        let found = unsafe {
            sys::wasm_runtime_get_export_global_inst(self.raw.as_ptr(), name.as_ptr(), &mut global)
        };
        (found && global.is_mutable && !global.global_data.is_null()).then_some(global)
    }

    /// The value of the exported mutable global `name`.
    pub fn global(&self, name: &str) -> Option<GlobalValue> {
        let global = self.mutable_global(name)?;
        let data = global.global_data;
        // SAFETY: `global_data` points at the global's storage inside the live instance, of
        // the width its kind says (unaligned reads: WAMR packs globals).
        unsafe {
            Some(match u32::from(global.kind) {
                sys::WASM_I32 => GlobalValue::I32(data.cast::<i32>().read_unaligned()),
                sys::WASM_I64 => GlobalValue::I64(data.cast::<i64>().read_unaligned()),
                sys::WASM_F32 => GlobalValue::F32(data.cast::<u32>().read_unaligned()),
                sys::WASM_F64 => GlobalValue::F64(data.cast::<u64>().read_unaligned()),
                _ => return None,
            })
        }
    }

    /// Sets the exported mutable global `name` (of the value's type).
    fn set_global(&self, name: &str, value: GlobalValue) -> Result<(), String> {
        let global = self.mutable_global(name).ok_or_else(|| {
            format!("the snapshot's global `{name}` is not an exported mutable global")
        })?;
        let data = global.global_data;
        // SAFETY: as in `global`; the kind is checked to match the value's width first.
        unsafe {
            match (u32::from(global.kind), value) {
                (sys::WASM_I32, GlobalValue::I32(v)) => data.cast::<i32>().write_unaligned(v),
                (sys::WASM_I64, GlobalValue::I64(v)) => data.cast::<i64>().write_unaligned(v),
                (sys::WASM_F32, GlobalValue::F32(v)) => data.cast::<u32>().write_unaligned(v),
                (sys::WASM_F64, GlobalValue::F64(v)) => data.cast::<u64>().write_unaligned(v),
                _ => return Err(format!("the snapshot's global `{name}` has another type")),
            }
        }
        Ok(())
    }

    /// The default memory's base address and size, or nothing when the module has none.
    fn memory_raw(&self) -> Option<(*mut u8, usize)> {
        // SAFETY: live instance; the memory and its base address belong to it (the address
        // changes when it grows: callers use it at once).
        unsafe {
            let memory = sys::wasm_runtime_get_default_memory(self.raw.as_ptr());
            if memory.is_null() {
                return None;
            }
            let bytes = sys::wasm_memory_get_cur_page_count(memory)
                * sys::wasm_memory_get_bytes_per_page(memory);
            let base = sys::wasm_memory_get_base_address(memory).cast::<u8>();
            if base.is_null() {
                return None;
            }
            Some((base, usize::try_from(bytes).ok()?))
        }
    }

    /// A copy of the default memory.
    pub fn memory_contents(&self) -> Vec<u8> {
        match self.memory_raw() {
            // SAFETY: the memory's bytes, read while nothing else runs in the instance.
            Some((base, len)) => unsafe { std::slice::from_raw_parts(base, len) }.to_vec(),
            None => Vec::new(),
        }
    }

    /// Puts `state` in this fresh instance: globals, memory grown to its size (within the
    /// instance's maximum), and its memory image, mapped into the memory when `mappable` (the
    /// memory is a reservation of its own), else copied.
    pub fn restore(&self, state: &InstanceState, mappable: bool) -> Result<(), String> {
        for (name, value) in &state.globals {
            self.set_global(name, *value)?;
        }
        // SAFETY: live instance; enlarging is WAMR's own memory.grow, within the maximum the
        // instance was made with.
        let grown = unsafe {
            let memory = sys::wasm_runtime_get_default_memory(self.raw.as_ptr());
            if memory.is_null() {
                return Err("the module has no memory".into());
            }
            let pages = sys::wasm_memory_get_cur_page_count(memory);
            pages >= state.memory_pages
                || sys::wasm_memory_enlarge(memory, state.memory_pages - pages)
        };
        if !grown {
            return Err("the memory cannot grow to the snapshot's size".into());
        }
        let (base, len) = self.memory_raw().ok_or("the module has no memory")?;
        let written = match NonNull::new(base) {
            // A kept memory may hold the image already (its last instance was the action's).
            Some(base) if mappable => {
                kept_memory::install(base, len, &state.image).unwrap_or_else(|| {
                    // SAFETY: with hardware bounds checks each instance's memory is a private
                    // anonymous mapping of its own (8 GiB), grown in place and unmapped whole
                    // with the instance; nothing runs in the instance meanwhile.
                    unsafe { state.image.map_into(base, len) }
                })
            }
            // SAFETY: the memory's bytes after growing, written while nothing runs in it.
            _ => state
                .image
                .copy_into(unsafe { std::slice::from_raw_parts_mut(base, len) }),
        };
        written.map_err(|e| e.to_string())
    }
}

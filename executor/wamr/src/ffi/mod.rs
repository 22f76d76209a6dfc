//! Every call into WAMR (and the few into libc) lives in this module, each with its SAFETY
//! argument; the rest of the backend is safe code built on these types.
//!
//! WAMR's thread rules as this module upholds them: the runtime is initialised once per process
//! ([`init_process`]); every thread that loads or runs a module first sets up its own WAMR
//! environment (the state that turns a fault in guest memory into a trap), lazily and
//! once ([`with_thread_env`], whose token cannot leave the thread); a loaded module is shared by
//! every thread (the one thing WAMR allows to be shared, [`LoadedModule`]); an instance lives and
//! dies on the thread that created it, and only the terminate request crosses threads
//! ([`Terminator`], which WAMR documents for exactly that).

#![allow(unsafe_code)]

mod code_in_place;
mod instance;
mod instance_state;
mod linear_memory;
mod module;
mod natives;
mod runtime;
mod stdin;
mod thread_env;

pub use instance::{CallOutcome, Instance, InstanceConfig, Terminator};
pub use module::{ExportKind, LoadedModule, ModuleKind};
pub use runtime::init_process;
pub use stdin::ParamsFile;
pub use thread_env::{ThreadEnv, with_thread_env};

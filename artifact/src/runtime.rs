//! The identity of a Wasm runtime build: which runtime, which exact version, which target.

use std::fmt;

/// The runtimes an executor can be built with; each one's artifacts are its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeId {
    Wasmtime,
    Wasmer,
    Wamr,
}

impl RuntimeId {
    pub const ALL: [RuntimeId; 3] = [RuntimeId::Wasmtime, RuntimeId::Wasmer, RuntimeId::Wamr];

    pub fn name(self) -> &'static str {
        match self {
            RuntimeId::Wasmtime => "wasmtime",
            RuntimeId::Wasmer => "wasmer",
            RuntimeId::Wamr => "wamr",
        }
    }

    /// The runtime version locked in this workspace's Cargo.lock (see build.rs).
    pub fn locked_version(self) -> &'static str {
        match self {
            RuntimeId::Wasmtime => env!("LOCKED_WASMTIME_VERSION"),
            RuntimeId::Wasmer => env!("LOCKED_WASMER_VERSION"),
            RuntimeId::Wamr => env!("LOCKED_WAMR_VERSION"),
        }
    }

    pub fn from_name(name: &str) -> Option<RuntimeId> {
        RuntimeId::ALL.into_iter().find(|r| r.name() == name)
    }
}

impl fmt::Display for RuntimeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The target triple of the machine this binary was built for, e.g. `x86_64-unknown-linux-gnu`.
pub fn host_target() -> String {
    target_lexicon::HOST.to_string()
}

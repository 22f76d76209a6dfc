//! The seam between the executor and a Wasm runtime: the [`Backend`] trait each runtime's crate
//! implements, what it is given and what it reports, and the host-side helpers backends share.

use std::{future::Future, path::PathBuf, sync::Arc, time::Instant};

use thiserror::Error;
use wasm_artifact::{Envelope, RuntimeId};

use crate::{capability::Grants, logs::OutputCapture, pool::CpuSlot};

pub mod deadline_queue;
pub mod dirty_pages;
pub mod disk_cache;
pub mod http_import;
pub mod kept_memory;
pub mod memory_image;
pub mod opened;
pub mod snapshot;
pub mod unblock;

/// The host-call bounds, `poll_oneoff` and the WASI ABI with its guest-memory decoding, from the
/// decoders' crate (fuzzed there).
pub use wasm_executor_decode::{host_limits, poll, wasi};

/// The most elements any table of a guest may have, on every backend: compilers emit one table
/// of function pointers sized by the program's indirect calls, and 64 Ki covers large Rust and
/// C programs; beyond it `table.grow` fails (returns -1) and a larger initial table is refused.
pub const MAX_TABLE_ELEMENTS: u32 = 65_536;

/// Settings every backend receives when the executor starts.
#[derive(Debug, Clone)]
pub struct BackendSettings {
    /// Where compiled portable modules are cached, keyed by content hash (a private
    /// directory, apart from the grant root).
    pub cache_dir: PathBuf,
    /// The largest size of that cache.
    pub max_cache_bytes: u64,
    /// Instances that may exist at once.
    pub max_instances: usize,
    /// Fewer would not serve the executor's slots (`--max-concurrent`, plus one guest on its
    /// task in async execution).
    pub min_instances: usize,
    /// The largest memory limit any container may have, in bytes.
    pub max_memory_bytes: u64,
    /// Bytes of an ended instance's written memory reset in place rather than returned to the
    /// kernel, per instance slot (`--keep-resident-kib`; runtimes without pooled slots ignore it).
    pub keep_resident_bytes: usize,
    /// The runtime that drives the timers and sockets of guests on blocking threads.
    pub host_io: tokio::runtime::Handle,
}

/// The module of an /init after decoding; precompiled envelopes are already verified.
pub enum PrepareInput<'a> {
    Portable {
        wasm: &'a [u8],
        sha256: &'a str,
    },
    Precompiled(&'a Envelope<'a>),
    /// A language engine, its active data lifted out (`executor/engine-module`): every instance of it
    /// is given an [`InstanceState`] with a memory image, which the backend maps into the
    /// instance's memory where it can (else copies).
    Engine {
        wasm: &'a [u8],
        sha256: &'a str,
    },
}

/// What a container grants its module, decided once at /init.
#[derive(Debug, Clone)]
pub struct ModuleSpec {
    /// Export to call instead of `_start`.
    pub entry: Option<String>,
    /// The capabilities granted by its annotations: a granted directory, open, is preopened
    /// at its guest path; `net_access` links the HTTP import.
    pub grants: Grants,
    /// Linear-memory limit in bytes.
    pub memory_limit_bytes: u64,
    /// The state every instance starts from, in place before its entry point runs: an
    /// engine's, or an action's pre-initialised engine (see `language.rs`).
    pub state: Option<Arc<InstanceState>>,
}

/// What a fresh instance of a language engine starts with: the engine's memory image (its data)
/// or an action's (the engine's with the pages its snapshot changed), the memory's size and the
/// mutable globals that differ from the module's initial values.
#[derive(Debug, Default)]
pub struct InstanceState {
    pub globals: Vec<(String, snapshot::GlobalValue)>,
    /// The memory's size, in 64 KiB pages: an instance's memory is grown to it first.
    pub memory_pages: u64,
    pub image: memory_image::MemoryImage,
}

/// One activation as a backend sees it: no HTTP, no OpenWhisk JSON beyond the parameters.
pub struct Activation {
    /// argv[0] for the guest.
    pub program_name: String,
    /// The JSON text of the parameters: argv[1] and stdin.
    pub params: String,
    pub env: Vec<(String, String)>,
    pub deadline: Instant,
    pub output: Arc<OutputCapture>,
}

/// How a guest ended; the caller turns this and the captured output into a response.
#[derive(Debug)]
pub enum GuestExit {
    /// `_start` (or the entry export) returned, or the guest called `proc_exit(code)`.
    Exited(i32),
    /// The guest trapped (a panic, an out-of-bounds access, unreachable, stack overflow…): the
    /// first line says why, further lines (a backtrace) go to the activation's logs.
    Trapped(String),
    /// Interrupted at its deadline.
    TimedOut,
    /// A memory growth beyond the container's limit was refused.
    MemoryExhausted,
    /// The host could not run the guest at all (instantiation failed, …).
    HostFailure(String),
}

#[derive(Debug, Error)]
pub enum PrepareError {
    #[error("{0}")]
    Invalid(String),
    #[error("the module imports `{module}::{name}`, which this executor does not provide{hint}")]
    MissingImport {
        module: String,
        name: String,
        hint: String,
    },
    #[error("the module has no exported function `{0}` to use as the entry point")]
    MissingEntry(String),
    #[error("internal error while preparing the module: {0:#}")]
    Internal(anyhow::Error),
}

impl PrepareError {
    /// The module imports `module::name`, which this container does not provide; with a hint
    /// when an annotation would provide it.
    pub fn missing_import(module: &str, name: &str) -> Self {
        let hint = crate::capability::provider_of(module, name).map_or(String::new(), |d| {
            format!(
                " to this action: it is provided only to actions annotated with `{}`",
                d.annotation
            )
        });
        PrepareError::MissingImport {
            module: module.to_owned(),
            name: name.to_owned(),
            hint,
        }
    }
}

/// An export as the entry point's check sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// A function taking this many parameters.
    Function { params: usize },
    /// A memory, table or global.
    Other,
}

/// The export to call: `_start` unless `main` (`requested`) names another exported function;
/// it must take no parameters. `exports` are the module's, as its backend reports them.
pub fn resolve_entry<S: AsRef<str>>(
    exports: impl IntoIterator<Item = (S, ExportKind)>,
    requested: Option<&str>,
) -> Result<String, PrepareError> {
    let name = requested.unwrap_or("_start");
    match exports
        .into_iter()
        .find(|(export, _)| export.as_ref() == name)
    {
        Some((_, ExportKind::Function { params: 0 })) => Ok(name.to_owned()),
        Some((_, ExportKind::Function { .. })) => Err(PrepareError::Invalid(format!(
            "the entry point `{name}` must take no parameters"
        ))),
        _ => Err(PrepareError::MissingEntry(name.to_owned())),
    }
}

/// How a build treats portable Wasm: compiled to native code (and cached on disk),
/// interpreted (nothing to cache), or refused (a headless build runs precompiled code only).
#[derive(Debug, Clone, Copy)]
pub enum PortableModules {
    Compiled,
    Interpreted,
    Refused,
}

impl PortableModules {
    pub fn label(self) -> &'static str {
        match self {
            PortableModules::Compiled => "compiled",
            PortableModules::Interpreted => "interpreted",
            PortableModules::Refused => "refused",
        }
    }
}

/// A Wasm runtime: loads a module once per distinct upload, links it for each container's
/// grants, and runs a fresh instance of it per activation.
pub trait Backend: Send + Sync + Sized + 'static {
    /// A loaded module: compiled or deserialized and checked, with nothing of any container in
    /// it; every container of the same upload shares one (see `shared_code.rs`).
    type Code: Send + Sync + 'static;

    /// A container's module: its shared code linked for the container's grants and entry point.
    type Module: Send + Sync + 'static;

    const RUNTIME: RuntimeId;

    /// What this build does with portable Wasm at /init, as `GET /health` reports it.
    const PORTABLE_MODULES: PortableModules;

    /// Whether guests can run as futures on the request's task (`--guest-execution async`),
    /// suspended while they wait; else they run on the pool.
    const SUSPENDS_GUESTS: bool = false;

    fn new(settings: &BackendSettings) -> anyhow::Result<Self>;

    /// Deserializes or compiles (through the cache) and checks the module. Blocking.
    fn load(&self, input: PrepareInput<'_>) -> Result<Self::Code, PrepareError>;

    /// Checks `code` against what the container grants (imports, entry point) and links it.
    /// Cheap after the first container with the same grants: it may run on an async task.
    fn link(&self, code: &Arc<Self::Code>, spec: &ModuleSpec)
    -> Result<Self::Module, PrepareError>;

    /// Runs one activation in a fresh instance of `module` on a pool thread, giving `cpu` back
    /// while the guest waits on a timer or the network. Blocking.
    fn run(&self, module: &Self::Module, activation: &Activation, cpu: CpuSlot) -> GuestExit;

    /// Pre-initialisation: instantiates `module` as [`Backend::run`] does for `activation`,
    /// calls its export `init` (none: only instantiates it), and reads the instance's
    /// exported mutable globals and its memory `memory`. Blocking.
    fn capture(
        &self,
        module: &Self::Module,
        activation: &Activation,
        init: Option<&str>,
        cpu: CpuSlot,
    ) -> Result<snapshot::InstanceImage, GuestExit>;

    /// How many instances can be alive at once, where the backend could reserve fewer than
    /// [`BackendSettings::max_instances`]; `None`: as many as asked for.
    fn instance_capacity(&self) -> Option<usize> {
        None
    }

    /// Whether [`Backend::run_on_task`] can run `module`'s guests: only if no host call of
    /// theirs can block a thread.
    fn runs_on_task(&self, _module: &Self::Module) -> bool {
        false
    }

    /// Runs one activation in a fresh instance of `module` on the calling async task: the
    /// guest yields to other tasks as it computes and is suspended while it waits on a timer
    /// or the network, giving `cpu` back for the wait. Only called where
    /// [`Backend::runs_on_task`] said so.
    fn run_on_task(
        &self,
        _module: &Self::Module,
        _activation: &Activation,
        _cpu: CpuSlot,
    ) -> impl Future<Output = GuestExit> + Send {
        std::future::ready(GuestExit::HostFailure(
            "this build runs guests on its pool only".into(),
        ))
    }
}

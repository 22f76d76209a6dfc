//! The WAMR backend: an upload's module is loaded once — portable Wasm for WAMR's fast
//! interpreter, or an AOT module from `wasm-precompile-wamr` — and shared by all containers of
//! that upload and all of their runs; every /run instantiates it afresh on its worker thread,
//! calls the entry point under the watchdog, and destroys the instance. All WAMR calls go
//! through `ffi`, the only unsafe code.

#![deny(unsafe_code)]

mod ffi;
mod host;
mod watchdog;

use std::{fs::File, os::fd::AsFd, sync::Arc};

use anyhow::{Context, bail};
use wasm_artifact::RuntimeId;

use self::{
    ffi::{
        CallOutcome, ExportKind, Instance, InstanceConfig, LoadedModule, ModuleKind, ParamsFile,
        ThreadEnv,
    },
    host::HostState,
    watchdog::Watchdog,
};
use wasm_executor::backend::{
    self, Activation, Backend, BackendSettings, GuestExit, ModuleSpec, PortableModules,
    PrepareError, PrepareInput, kept_memory, resolve_entry, snapshot::InstanceImage,
};
use wasm_executor::{capability::dir::GrantedDir, net::HttpGetter, pool::CpuSlot};

/// The interpreter's operand and frame stack per instance. 512 KiB takes large Rust and C
/// programs through deep call chains.
const INTERPRETER_STACK_BYTES: u32 = 512 << 10;
/// The same stack for an instance of AOT code, which runs on the thread's own stack: this
/// build keeps no frames of compiled code there (no call-stack dumps, no profiling). WAMR zeroes
/// the whole stack at every instantiation, so an interpreter's would cost every activation a
/// 512 KiB memset.
const AOT_STACK_BYTES: u32 = 4 << 10;

/// Exports WAMR calls by itself while instantiating, where the watchdog cannot reach them yet.
const POST_INSTANTIATE_EXPORTS: [&str; 3] =
    ["_initialize", "__post_instantiate", "__wasm_call_ctors"];

// The WAMR profile (shared with the precompiler) holds tables to the executor's maximum.
const _: () =
    assert!(wamr_profile::MAX_TABLE_ELEMENTS == wasm_executor::backend::MAX_TABLE_ELEMENTS);

pub struct WamrBackend {
    watchdog: Watchdog,
    /// The profile tag AOT payloads must carry (see `wamr-profile`).
    tag: String,
    /// The CPU model of this architecture's AOT code; a payload's CPU features are checked
    /// against this machine's.
    cpu: &'static wamr_profile::CpuModel,
    /// Whether instances' memories are reservations of their own that memory images can be
    /// mapped into (with hardware bounds checks: 64-bit targets), else images are copied.
    images_mappable: bool,
    /// WASI's stdout and stderr descriptors: never written, since `fd_write` to them is captured,
    /// but the guest may query them.
    null_output: File,
}

/// A container's module: its upload's loaded module, the imports checked against the
/// container's grants and the entry point resolved.
pub struct PreparedModule {
    module: Arc<LoadedModule>,
    entry: String,
    spec: ModuleSpec,
}

impl Backend for WamrBackend {
    type Code = LoadedModule;
    type Module = PreparedModule;

    const RUNTIME: RuntimeId = RuntimeId::Wamr;

    const PORTABLE_MODULES: PortableModules = PortableModules::Interpreted;

    fn new(settings: &BackendSettings) -> anyhow::Result<Self> {
        let version = wamr_runtime_sys::WAMR_VERSION;
        if version != RuntimeId::Wamr.locked_version() {
            bail!(
                "this executor is built from WAMR {version} ({}), but artifacts are labelled WAMR {}; update the wamrx-sys entry in artifact/build.rs",
                wamr_runtime_sys::WAMR_SOURCES,
                RuntimeId::Wamr.locked_version()
            );
        }
        ffi::init_process()?;
        let watchdog = Watchdog::start()?;
        let null_output = File::options()
            .write(true)
            .open("/dev/null")
            .context("opening /dev/null for the guests' stdio")?;
        let target = wamr_profile::TargetProfile::this_machine()?;
        let tag = wamr_profile::profile_tag(version, target);
        let native = wamr_profile::CodeCpu::with_optional(target.cpu, wamr_profile::cpu::host_has);
        tracing::info!(
            %tag,
            runs = %native,
            sources = wamr_runtime_sys::WAMR_SOURCES,
            max_instances = settings.max_instances,
            max_memory_mb = settings.max_memory_bytes >> 20,
            "WAMR runtime ready: portable modules on the fast interpreter, precompiled ones as AOT code"
        );
        // Portable modules are interpreted, not compiled, so there is nothing to cache.
        tracing::debug!(cache_dir = %settings.cache_dir.display(), max_cache_bytes = settings.max_cache_bytes, "the WAMR backend keeps no compile cache");
        Ok(WamrBackend {
            watchdog,
            tag,
            cpu: target.cpu,
            images_mappable: target.hardware_bounds_checks,
            null_output,
        })
    }

    fn load(&self, input: PrepareInput<'_>) -> Result<LoadedModule, PrepareError> {
        let (code, expected) = match input {
            PrepareInput::Portable { wasm, sha256 } | PrepareInput::Engine { wasm, sha256 } => {
                tracing::debug!(sha256, "portable module for the fast interpreter");
                if wamr_profile::declares_start_function(wasm) {
                    return Err(PrepareError::Invalid(
                        "the module declares a start function; WAMR runs it while instantiating, where the time limit cannot reach it, \
                         so this executor does not accept such modules"
                            .into(),
                    ));
                }
                wamr_profile::check_tables(wasm).map_err(PrepareError::Invalid)?;
                (wasm, ModuleKind::Bytecode)
            }
            PrepareInput::Precompiled(envelope) => {
                let (aot, code) = wamr_profile::unwrap(
                    &self.tag,
                    self.cpu,
                    wamr_profile::cpu::host_has,
                    &envelope.payload,
                )
                .map_err(|e| PrepareError::Invalid(e.to_string()))?;
                tracing::debug!(%code, "AOT module for this machine's CPU");
                (aot, ModuleKind::Aot)
            }
        };
        ffi::with_thread_env(|env| load_checked(env, code, expected))
            .map_err(|e| PrepareError::Internal(anyhow::anyhow!(e)))?
    }

    fn link(
        &self,
        code: &Arc<LoadedModule>,
        spec: &ModuleSpec,
    ) -> Result<PreparedModule, PrepareError> {
        check_imports(code, spec)?;
        let entry = entry_of(code, spec.entry.as_deref())?;
        tracing::debug!(kind = ?code.kind(), %entry, "module linked");
        Ok(PreparedModule {
            module: Arc::clone(code),
            entry,
            spec: spec.clone(),
        })
    }

    fn run(&self, module: &PreparedModule, activation: &Activation, cpu: CpuSlot) -> GuestExit {
        let ran = ffi::with_thread_env(|env| {
            self.instantiate_and_call(env, module, activation, cpu, Some(&module.entry), |_| ())
        });
        match ran {
            Ok(Ok((code, ()))) => GuestExit::Exited(code),
            Ok(Err(exit)) => exit,
            Err(failure) => GuestExit::HostFailure(failure),
        }
    }

    fn capture(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        init: Option<&str>,
        cpu: CpuSlot,
    ) -> Result<InstanceImage, GuestExit> {
        let read = |instance: &Instance<'_>| InstanceImage {
            globals: module
                .module
                .exports()
                .into_iter()
                .filter_map(|e| Some((e.name.clone(), instance.global(&e.name)?)))
                .collect(),
            memory: instance.memory_contents(),
        };
        let captured = ffi::with_thread_env(|env| {
            self.instantiate_and_call(env, module, activation, cpu, init, read)
        });
        match captured.map_err(GuestExit::HostFailure)?? {
            (0, image) => Ok(image),
            (code, _) => Err(GuestExit::Exited(code)),
        }
    }
}

impl WamrBackend {
    /// One instance on the calling worker thread: instantiated, its snapshot written into it,
    /// `entry` called (none: nothing called), and what the caller wants read from it.
    fn instantiate_and_call<R>(
        &self,
        env: &ThreadEnv,
        module: &PreparedModule,
        activation: &Activation,
        cpu: CpuSlot,
        entry: Option<&str>,
        read: impl FnOnce(&Instance<'_>) -> R,
    ) -> Result<(i32, R), GuestExit> {
        let host = HostState::new(
            Arc::clone(&activation.output),
            module.spec.grants.get::<HttpGetter>(),
            activation.deadline,
            module.spec.memory_limit_bytes,
            cpu,
        );
        let stdin = ParamsFile::new(activation.params.as_bytes()).map_err(|error| {
            GuestExit::HostFailure(format!("creating the guest's stdin: {error}"))
        })?;
        let argv = [activation.program_name.as_str(), activation.params.as_str()];
        // The directory opened at /init, by its descriptor: no path is looked up again.
        let dir = module.spec.grants.get::<GrantedDir>();
        let config = InstanceConfig {
            argv: &argv,
            env: &activation.env,
            dir: dir.as_deref().map(|dir| (dir.guest_path(), dir.fd())),
            stdin: stdin.fd(),
            stdout: self.null_output.as_fd(),
            stderr: self.null_output.as_fd(),
            stack_bytes: match module.module.kind() {
                ModuleKind::Aot => AOT_STACK_BYTES,
                ModuleKind::Bytecode => INTERPRETER_STACK_BYTES,
            },
        };
        kept_memory::prefer(module.spec.state.as_ref().map(|state| &state.image));
        let instance = match Instance::new(env, &module.module, &host, &config) {
            Ok(instance) => instance,
            Err(_) if host.memory_exceeded() => return Err(GuestExit::MemoryExhausted),
            Err(error) => return Err(GuestExit::Trapped(format!("instantiation failed: {error}"))),
        };
        // WAMR never lowers a module's initial memory to the container's limit: refuse here,
        // as an instantiation beyond the limit.
        let beyond_limit = |instance: &Instance<'_>| {
            instance
                .memory_bytes()
                .is_some_and(|bytes| bytes > host.memory_limit_bytes())
        };
        if beyond_limit(&instance) {
            return Err(GuestExit::MemoryExhausted);
        }
        if let Some(state) = &module.spec.state {
            let restored = instance.restore(state, self.images_mappable);
            if beyond_limit(&instance) || (restored.is_err() && host.memory_exceeded()) {
                return Err(GuestExit::MemoryExhausted);
            }
            restored.map_err(|error| {
                GuestExit::HostFailure(format!("restoring the action's snapshot: {error}"))
            })?;
        }
        let Some(entry) = entry else {
            return Ok((0, read(&instance)));
        };
        let watch = self
            .watchdog
            .watch(activation.deadline, instance.terminator());
        let outcome = instance.call(entry);
        let timed_out = watch.fired();
        drop(watch);
        let code = match outcome {
            CallOutcome::Returned(code) => code.unwrap_or(0),
            CallOutcome::Failed(_) if timed_out => return Err(GuestExit::TimedOut),
            CallOutcome::Failed(message) if message.contains("wasi proc exit") => {
                // WASI exit codes are u32; OpenWhisk reports them like a process status.
                instance.wasi_exit_code() as i32
            }
            CallOutcome::Failed(_) if host.memory_exceeded() => {
                return Err(GuestExit::MemoryExhausted);
            }
            CallOutcome::Failed(message) => {
                return Err(GuestExit::Trapped(
                    message.trim_start_matches("Exception: ").to_owned(),
                ));
            }
        };
        Ok((code, read(&instance)))
    }
}

/// Loads `code` and checks that it is of the kind expected. Runs on a pool thread.
fn load_checked(
    env: &ThreadEnv,
    code: &[u8],
    expected: ModuleKind,
) -> Result<LoadedModule, PrepareError> {
    let module = LoadedModule::load(env, code).map_err(|error| {
        PrepareError::Invalid(match expected {
            ModuleKind::Bytecode => format!("the module does not compile: {error}"),
            ModuleKind::Aot => format!("the artifact does not load in this executor: {error}"),
        })
    })?;
    if module.kind() != expected {
        return Err(PrepareError::Invalid(
            "the artifact's payload is not a WAMR AOT module; precompile it with wasm-precompile-wamr".into(),
        ));
    }
    tracing::debug!(kind = ?module.kind(), "module loaded into WAMR");
    Ok(module)
}

/// Names the first import this container does not provide, with a hint when an annotation
/// would. WAMR resolves imports against all registered natives, so the `openwhisk` ones, which
/// exist for every module, are refused here to a container not granted their capability.
fn check_imports(module: &LoadedModule, spec: &ModuleSpec) -> Result<(), PrepareError> {
    for import in module.imports() {
        let withheld = spec.grants.set().withholds(&import.module, &import.name);
        if !import.linked || withheld {
            return Err(PrepareError::missing_import(&import.module, &import.name));
        }
    }
    Ok(())
}

/// The export to call (see [`resolve_entry`]). Modules with functions WAMR would run during
/// instantiation are refused (see the start-function check).
fn entry_of(module: &LoadedModule, requested: Option<&str>) -> Result<String, PrepareError> {
    let exports = module.exports();
    if let Some(export) = exports
        .iter()
        .find(|e| POST_INSTANTIATE_EXPORTS.contains(&e.name.as_str()))
    {
        return Err(PrepareError::Invalid(format!(
            "the module exports `{}`, which WAMR runs while instantiating, where the time limit cannot reach it",
            export.name
        )));
    }
    let exports = exports.iter().map(|export| {
        let kind = match export.kind {
            ExportKind::Func { params } => backend::ExportKind::Function {
                params: params as usize,
            },
            _ => backend::ExportKind::Other,
        };
        (export.name.as_str(), kind)
    });
    resolve_entry(exports, requested)
}

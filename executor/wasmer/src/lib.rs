//! The wasmer backend: modules compiled with LLVM at /init (or loaded from our cache, or
//! deserialized from a verified artifact), checked against the imports a container provides;
//! a fresh `Store` and instance per /run, a watchdog for the time limit (see `deadline.rs`),
//! and memory-limiting tunables. The headless build has no compiler and takes artifacts only.

#[cfg(all(feature = "llvm", feature = "headless"))]
compile_error!(
    "the features `llvm` and `headless` are exclusive: pick the build with or without a compiler"
);
#[cfg(not(any(feature = "llvm", feature = "headless")))]
compile_error!(
    "enable `llvm` (wasm-executor-wasmer) or `headless` (wasm-executor-wasmer-headless)"
);

mod deadline;
mod engine;
mod host;
mod http_import;
mod imports;
mod memory;
#[cfg(target_arch = "aarch64")]
mod soft_float;
mod stop;
mod wasi;

use std::sync::Arc;

use wasm_artifact::RuntimeId;
use wasmer::{
    Engine, Extern, ExternType, FunctionEnv, Instance, InstantiationError, Module, Mutability,
    Pages, RuntimeError, Store, Value,
};

use self::{
    deadline::{RunClock, Watchdog},
    host::RunEnv,
    memory::MemoryBudget,
    stop::HostStop,
    wasi::WasiCtx,
};
use wasm_executor::backend::{
    Activation, Backend, BackendSettings, ExportKind, GuestExit, InstanceState, ModuleSpec,
    PortableModules, PrepareError, PrepareInput, kept_memory, resolve_entry,
    snapshot::{GlobalValue, InstanceImage},
};
use wasm_executor::{capability::dir::GrantedDir, net::HttpGetter, pool::CpuSlot};

pub struct WasmerBackend {
    unblocker: wasm_executor::backend::unblock::Unblocker,
    #[cfg(feature = "llvm")]
    cache: wasm_executor::backend::disk_cache::DiskCache,
    watchdog: Watchdog,
}

/// A loaded module with its own engine: wasmer frees machine code only with the engine that
/// loaded it, so each upload's module has one and its code goes with the last container that
/// holds it (one engine for the process would keep the code of every module ever loaded: a
/// tenant that creates and destroys containers would grow the executor without bound).
pub struct LoadedCode {
    module: Module,
    engine: Engine,
}

/// A container's module: its shared code, entry point and what the container grants it.
pub struct PreparedModule {
    code: Arc<LoadedCode>,
    entry: String,
    spec: ModuleSpec,
}

impl Backend for WasmerBackend {
    type Code = LoadedCode;
    type Module = PreparedModule;

    const RUNTIME: RuntimeId = RuntimeId::Wasmer;

    #[cfg(feature = "llvm")]
    const PORTABLE_MODULES: PortableModules = PortableModules::Compiled;
    #[cfg(not(feature = "llvm"))]
    const PORTABLE_MODULES: PortableModules = PortableModules::Refused;

    fn new(settings: &BackendSettings) -> anyhow::Result<Self> {
        deadline::accept_only_own_interrupts(&engine::build())?;
        let watchdog = Watchdog::start()?;
        // Instances are allocated on demand (no pool to size); the memory limit is per container.
        tracing::info!(
            compiler = engine::HAS_COMPILER,
            max_instances = settings.max_instances,
            max_memory_mb = settings.max_memory_bytes >> 20,
            "wasmer engine ready"
        );
        // The headless build compiles nothing, so it has no cache directory to use.
        #[cfg(not(feature = "llvm"))]
        let _unused = (&settings.cache_dir, settings.max_cache_bytes);
        Ok(WasmerBackend {
            unblocker: wasm_executor::backend::unblock::Unblocker::start()?,
            #[cfg(feature = "llvm")]
            cache: wasm_executor::backend::disk_cache::DiskCache::new(
                &settings.cache_dir,
                "wasmer",
                compiled_code_key(),
                settings.max_cache_bytes,
            )?,
            watchdog,
        })
    }

    fn load(&self, input: PrepareInput<'_>) -> Result<LoadedCode, PrepareError> {
        let engine = engine::build();
        let module = match input {
            PrepareInput::Portable { wasm, sha256 } | PrepareInput::Engine { wasm, sha256 } => {
                self.compile(&engine, wasm, sha256)?
            }
            // SAFETY: the envelope was verified before we got here (signature or the operator's
            // explicit trust, runtime, exact version, target triple, payload hash): wasmer does
            // not check the architecture of what it deserializes, the envelope did.
            PrepareInput::Precompiled(envelope) => unsafe {
                Module::deserialize(&engine, &*envelope.payload)
            }
            .map_err(|e| {
                PrepareError::Invalid(format!("the artifact does not load in this executor: {e}"))
            })?,
        };
        Ok(LoadedCode { module, engine })
    }

    fn link(
        &self,
        code: &Arc<LoadedCode>,
        spec: &ModuleSpec,
    ) -> Result<PreparedModule, PrepareError> {
        let entry = entry_of(&code.module, spec.entry.as_deref())?;
        imports::check(&code.engine, &code.module, spec.grants.set())?;
        Ok(PreparedModule {
            code: Arc::clone(code),
            entry,
            spec: spec.clone(),
        })
    }

    fn run(&self, module: &PreparedModule, activation: &Activation, cpu: CpuSlot) -> GuestExit {
        match self.instantiate_and_call(module, activation, cpu, Some(&module.entry), |_, _| ()) {
            Ok((code, ())) => GuestExit::Exited(code),
            Err(exit) => exit,
        }
    }

    fn capture(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        init: Option<&str>,
        cpu: CpuSlot,
    ) -> Result<InstanceImage, GuestExit> {
        match self.instantiate_and_call(module, activation, cpu, init, read_image)? {
            (0, image) => Ok(image),
            (code, _) => Err(GuestExit::Exited(code)),
        }
    }
}

impl WasmerBackend {
    /// Instantiates `module` in a fresh store, writes its snapshot into the instance, calls
    /// `entry` (none: calls nothing), and reads what the caller wants from the instance.
    fn instantiate_and_call<R>(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        cpu: CpuSlot,
        entry: Option<&str>,
        read: impl FnOnce(&mut Store, &Instance) -> R,
    ) -> Result<(i32, R), GuestExit> {
        // A host call still blocked after the deadline is interrupted (see `unblock.rs`); the
        // host-call guard then ends the activation.
        let _unblock = self.unblocker.register(activation.deadline);
        let clock = Arc::new(RunClock::new(activation.deadline));
        let budget = MemoryBudget::new(module.spec.memory_limit_bytes);
        let wasi = WasiCtx::new(
            activation,
            module.spec.grants.get::<GrantedDir>().as_deref(),
        )
        .map_err(|error| GuestExit::HostFailure(format!("{error:#}")))?;
        let mut store = Store::new(module.code.engine.clone());
        let env = FunctionEnv::new(
            &mut store,
            RunEnv {
                memory: None,
                wasi,
                net: module.spec.grants.get::<HttpGetter>(),
                held: Default::default(),
                clock: Arc::clone(&clock),
                cpu,
            },
        );
        let granted = module.spec.grants.set();
        let imports = imports::build(&mut store, &env, &module.code.module, granted)
            .map_err(GuestExit::HostFailure)?;
        // Watched from before instantiation on: a start function may loop too.
        let _watch = self.watchdog.watch(Arc::clone(&clock), store.interrupter());
        kept_memory::prefer(module.spec.state.as_ref().map(|state| &state.image));
        let instantiated = memory::with_budget(&budget, || {
            Instance::new(&mut store, &module.code.module, &imports).map_err(Box::new)
        });
        let instance = instantiated.map_err(|error| match *error {
            InstantiationError::Start(error) => classify(error, &budget, &clock),
            _ if budget.exceeded() => GuestExit::MemoryExhausted,
            // The module's own fault (a table beyond the limit, …), as on the other
            // backends: its checks at /init left nothing else that could fail here.
            error => GuestExit::Trapped(format!("instantiation failed: {error}")),
        })?;
        env.as_mut(&mut store).memory = instance.exports.get_memory("memory").ok().cloned();
        if let Some(state) = &module.spec.state {
            restore(&mut store, &instance, state).map_err(|error| {
                if budget.exceeded() {
                    GuestExit::MemoryExhausted
                } else {
                    GuestExit::HostFailure(format!("restoring the action's snapshot: {error}"))
                }
            })?;
        }
        let code = match entry {
            None => 0,
            Some(entry) => {
                let func = instance.exports.get_function(entry).map_err(|error| {
                    GuestExit::HostFailure(format!("entry point `{entry}`: {error}"))
                })?;
                match func.call(&mut store, &[]) {
                    Ok(results) => match results.first() {
                        Some(Value::I32(code)) => *code,
                        _ => 0,
                    },
                    Err(error) => return Err(classify(error, &budget, &clock)),
                }
            }
        };
        Ok((code, read(&mut store, &instance)))
    }
    #[cfg(feature = "llvm")]
    fn compile(&self, engine: &Engine, wasm: &[u8], sha256: &str) -> Result<Module, PrepareError> {
        let (module, source) = self
            .cache
            .load_or_compile(
                sha256,
                // SAFETY: the cache hands over an entry only after its MAC verified: written by
                // this cache from a module this engine compiled (the key names the engine).
                |bytes| unsafe { Module::deserialize(engine, bytes) }.map_err(anyhow::Error::from),
                || Module::new(engine, wasm).map_err(anyhow::Error::from),
                |module| Ok(module.serialize()?.to_vec()),
            )
            .map_err(|e| PrepareError::Invalid(format!("the module does not compile: {e:#}")))?;
        tracing::debug!(?source, sha256, "portable module ready");
        Ok(module)
    }

    #[cfg(not(feature = "llvm"))]
    fn compile(
        &self,
        _engine: &Engine,
        _wasm: &[u8],
        _sha256: &str,
    ) -> Result<Module, PrepareError> {
        Err(PrepareError::Invalid(
            "this executor is the headless wasmer build: it has no compiler and runs only artifacts precompiled by \
             `wasm-precompile compile --runtime wasmer`; precompile the module or use the full wasmer build"
                .into(),
        ))
    }
}

/// Everything code compiled at /init depends on besides the module: cached code compiled
/// under another wasmer version, CPU or profile is never picked up.
#[cfg(feature = "llvm")]
fn compiled_code_key() -> (String, String, String, String) {
    let target = wasmer_profile::host_target();
    (
        RuntimeId::Wasmer.locked_version().to_owned(),
        target.triple().to_string(),
        format!("{:?}", target.cpu_features()),
        format!("{:?}", wasmer_profile::features()),
    )
}

/// Puts `state` in a fresh instance: its globals, its memory grown to the state's size (within
/// the container's budget) and its memory image, mapped into the memory.
fn restore(store: &mut Store, instance: &Instance, state: &InstanceState) -> Result<(), String> {
    for (name, value) in &state.globals {
        let global = instance
            .exports
            .get_global(name)
            .map_err(|e| e.to_string())?;
        let value = match *value {
            GlobalValue::I32(v) => Value::I32(v),
            GlobalValue::I64(v) => Value::I64(v),
            GlobalValue::F32(bits) => Value::F32(f32::from_bits(bits)),
            GlobalValue::F64(bits) => Value::F64(f64::from_bits(bits)),
        };
        global.set(&mut *store, value).map_err(|e| e.to_string())?;
    }
    let memory = instance
        .exports
        .get_memory("memory")
        .map_err(|e| e.to_string())?;
    let pages = u64::from(memory.view(&*store).size().0);
    if state.memory_pages > pages {
        let more = u32::try_from(state.memory_pages - pages).map_err(|e| e.to_string())?;
        memory
            .grow(&mut *store, Pages(more))
            .map_err(|e| e.to_string())?;
    }
    let view = memory.view(&*store);
    let (len, base) = (view.data_size() as usize, view.data_ptr());
    let base = std::ptr::NonNull::new(base).ok_or("the memory has no base")?;
    let installed = kept_memory::install(base, len, &state.image).unwrap_or_else(|| {
        // SAFETY: every other memory of an instance is made by `LimitingTunables` (memory.rs)
        // from wasmer's own: a private anonymous mapping of this instance alone, unmapped with it
        // (a memory that grows past its reservation moves into a new mapping, copying its
        // bytes); no guest code runs meanwhile.
        unsafe { state.image.map_into(base, len) }
    });
    installed.map_err(|e| e.to_string())
}

/// The instance's exported mutable globals and its memory `memory`.
fn read_image(store: &mut Store, instance: &Instance) -> InstanceImage {
    let mut image = InstanceImage::default();
    for (name, export) in instance.exports.iter() {
        match export {
            Extern::Global(global) if global.ty(&*store).mutability == Mutability::Var => {
                let value = match global.get(&mut *store) {
                    Value::I32(v) => GlobalValue::I32(v),
                    Value::I64(v) => GlobalValue::I64(v),
                    Value::F32(v) => GlobalValue::F32(v.to_bits()),
                    Value::F64(v) => GlobalValue::F64(v.to_bits()),
                    _ => continue,
                };
                image.globals.push((name.clone(), value));
            }
            Extern::Memory(memory) if name == "memory" => {
                image.memory = memory.view(&*store).copy_to_vec().unwrap_or_default();
            }
            _ => {}
        }
    }
    image
}

/// The export to call (see [`resolve_entry`]).
fn entry_of(module: &Module, requested: Option<&str>) -> Result<String, PrepareError> {
    let exports = module.exports().map(|export| {
        let kind = match export.ty() {
            ExternType::Function(ty) => ExportKind::Function {
                params: ty.params().len(),
            },
            _ => ExportKind::Other,
        };
        (export.name().to_owned(), kind)
    });
    resolve_entry(exports, requested)
}

fn classify(error: RuntimeError, budget: &MemoryBudget, clock: &RunClock) -> GuestExit {
    match error.downcast_ref::<HostStop>() {
        Some(HostStop::Exit(code)) => return GuestExit::Exited(*code),
        Some(HostStop::Deadline) => return GuestExit::TimedOut,
        Some(HostStop::Fault(message)) => return GuestExit::Trapped(message.clone()),
        None => {}
    }
    if budget.exceeded() {
        return GuestExit::MemoryExhausted;
    }
    if clock.signalled()
        && error.clone().to_trap() == Some(wasmer::sys::vm::TrapCode::HostInterrupt)
    {
        return GuestExit::TimedOut;
    }
    GuestExit::Trapped(format!("{}\n{error:?}", error.message()))
}

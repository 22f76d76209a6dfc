//! The wasmtime backend: modules compiled once (or loaded from our cache, or deserialized from
//! a verified artifact) and pre-instantiated once per grant set, shared by every container of
//! the same upload; a fresh `Store` and instance per /run, instantiated and called
//! asynchronously: on the request's task where no host call can block a thread, else on a
//! pool thread that drives the same future (its timers and sockets on the host I/O runtime).
//! Language engines run on an engine of their own, whose memories take memory images.

mod capabilities;
mod descriptors;
mod engine;
mod http_import;
mod image_memory;
mod poll;
mod random;
mod stdio;

use std::{
    collections::HashMap,
    future::Future,
    ptr::NonNull,
    sync::{Arc, RwLock},
    time::Instant,
};

use wasm_artifact::RuntimeId;
use wasmtime::{
    Engine, Extern, ExternType, Instance, InstancePre, Linker, Module, Mutability, ResourceLimiter,
    Store, Trap, Val,
};
use wasmtime_wasi::{I32Exit, WasiCtxBuilder, p1::WasiP1Ctx, p2::pipe::MemoryInputPipe};

use self::{poll::GuestMonotonicClock, stdio::CaptureStream};
use wasm_executor::backend::{
    Activation, Backend, BackendSettings, ExportKind, GuestExit, InstanceState, MAX_TABLE_ELEMENTS,
    ModuleSpec, PortableModules, PrepareError, PrepareInput,
    disk_cache::DiskCache,
    http_import::HeldBody,
    kept_memory, resolve_entry,
    snapshot::{GlobalValue, InstanceImage},
    unblock::Unblocker,
};
use wasm_executor::{
    backend::opened::OpenedDescriptors, capability::GrantSet, host_io, logs::Stream,
    net::HttpGetter, pool::CpuSlot,
};

pub struct WasmtimeBackend {
    engine: Engine,
    cache: DiskCache,
    /// The engine of language engines (see `engine.rs`) and its compiled modules.
    image_engine: Engine,
    image_cache: DiskCache,
    unblocker: Unblocker,
    /// Drives the futures of guests on pool threads (`host_io.rs`).
    host_io: tokio::runtime::Handle,
    allocator: engine::Allocator,
}

/// A loaded module and its pre-instantiated forms, made on first use: linked against WASI and
/// the imports of a grant set, one form per set of capabilities its containers hold.
pub struct LoadedCode {
    module: Module,
    linked: RwLock<HashMap<GrantSet, InstancePre<RunState>>>,
}

/// A container's module: its code's pre-instantiated form for the container's grants.
pub struct PreparedModule {
    pre: InstancePre<RunState>,
    entry: String,
    spec: ModuleSpec,
}

/// Per-activation host state.
pub struct RunState {
    wasi: WasiP1Ctx,
    /// What the guest opened (see `descriptors.rs`).
    opened: OpenedDescriptors,
    limiter: MemoryLimiter,
    net: Option<Arc<HttpGetter>>,
    deadline: Instant,
    /// Where the guest's monotonic clock starts (see `poll.rs`).
    clock_origin: Instant,
    held: HeldBody,
    /// The guest's CPU slot, given back while it waits.
    cpu: CpuSlot,
}

impl RunState {
    /// Awaits `wait` without the guest's CPU slot.
    async fn off_cpu<F: Future>(&mut self, wait: F) -> F::Output {
        self.cpu.released_during(wait).await
    }
}

/// Enforces the container's memory limit on linear-memory growth and remembers a refusal, so
/// the trap that follows is reported as memory exhaustion.
struct MemoryLimiter {
    limit_bytes: u64,
    exceeded: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.limit_bytes {
            self.exceeded = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// Tables are held to the executor's maximum also when instances are not pooled.
    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS as usize)
    }
}

impl Backend for WasmtimeBackend {
    type Code = LoadedCode;
    type Module = PreparedModule;

    const RUNTIME: RuntimeId = RuntimeId::Wasmtime;

    const PORTABLE_MODULES: PortableModules = PortableModules::Compiled;

    const SUSPENDS_GUESTS: bool = true;

    fn new(settings: &BackendSettings) -> anyhow::Result<Self> {
        let (engine, allocator) = engine::build(settings)?;
        let image_engine = engine::build_for_images()?;
        engine::start_ticker(vec![engine.clone(), image_engine.clone()])?;
        let cache_of = |name: &str, engine: &Engine| {
            DiskCache::new(
                &settings.cache_dir,
                name,
                engine.precompile_compatibility_hash(),
                settings.max_cache_bytes,
            )
        };
        let cache = cache_of("wasmtime", &engine)?;
        let image_cache = cache_of("wasmtime-engines", &image_engine)?;
        tracing::info!(?allocator, "wasmtime engine ready");
        Ok(WasmtimeBackend {
            engine,
            cache,
            image_engine,
            image_cache,
            unblocker: Unblocker::start()?,
            allocator,
            host_io: settings.host_io.clone(),
        })
    }

    fn load(&self, input: PrepareInput<'_>) -> Result<LoadedCode, PrepareError> {
        let module = match input {
            PrepareInput::Portable { wasm, sha256 } => {
                compile(&self.engine, &self.cache, wasm, sha256)?
            }
            PrepareInput::Engine { wasm, sha256 } => {
                compile(&self.image_engine, &self.image_cache, wasm, sha256)?
            }
            // SAFETY: the envelope was verified (signature or explicit operator trust, runtime,
            // version, target, payload hash) before we got here; wasmtime checks its own header.
            PrepareInput::Precompiled(envelope) => {
                unsafe { Module::deserialize(&self.engine, &envelope.payload) }.map_err(|e| {
                    PrepareError::Invalid(format!(
                        "the artifact does not load in this executor: {e:#}"
                    ))
                })?
            }
        };
        Ok(LoadedCode {
            module,
            linked: Default::default(),
        })
    }

    fn link(
        &self,
        code: &Arc<LoadedCode>,
        spec: &ModuleSpec,
    ) -> Result<PreparedModule, PrepareError> {
        let entry = entry_of(&code.module, spec.entry.as_deref())?;
        let set = spec.grants.set();
        let known = code.linked.read().ok().and_then(|l| l.get(&set).cloned());
        let pre = match known {
            Some(pre) => pre,
            None => {
                let pre = self.instantiate_pre(&code.module, set)?;
                // Two containers linking at once both succeed; the first form is kept.
                let mut linked = code
                    .linked
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                linked.entry(set).or_insert(pre).clone()
            }
        };
        Ok(PreparedModule {
            pre,
            entry,
            spec: spec.clone(),
        })
    }

    fn run(&self, module: &PreparedModule, activation: &Activation, cpu: CpuSlot) -> GuestExit {
        // A host call still blocked after the deadline is interrupted (see `unblock.rs`).
        let _unblock = self.unblocker.register(activation.deadline);
        host_io::wait_for(&self.host_io, self.execute(module, activation, cpu, drop))
    }

    fn capture(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        init: Option<&str>,
        cpu: CpuSlot,
    ) -> Result<InstanceImage, GuestExit> {
        let _unblock = self.unblocker.register(activation.deadline);
        host_io::wait_for(&self.host_io, async {
            let (mut store, instance, code) = self
                .instantiate_and_call(module, activation, cpu, init)
                .await?;
            if code != 0 {
                return Err(GuestExit::Exited(code));
            }
            Ok(read_image(&mut store, &instance))
        })
    }

    fn instance_capacity(&self) -> Option<usize> {
        match self.allocator {
            engine::Allocator::Pooling { slots } => Some(slots),
            engine::Allocator::OnDemand => None,
        }
    }

    /// Its standard streams are memory and it waits in `poll_oneoff`, which suspends it: a
    /// guest blocks no thread unless a capability's host calls do.
    fn runs_on_task(&self, module: &PreparedModule) -> bool {
        !capabilities::block_threads(module.spec.grants.set())
    }

    fn run_on_task(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        cpu: CpuSlot,
    ) -> impl Future<Output = GuestExit> + Send {
        self.execute(module, activation, cpu, |store| {
            self.end_after_answer(module, store)
        })
    }
}

impl WasmtimeBackend {
    /// Instantiates `module` in a fresh store and calls its entry point, asynchronously; the
    /// store of an activation that ended is handed to `end`.
    async fn execute(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        cpu: CpuSlot,
        end: impl FnOnce(Store<RunState>),
    ) -> GuestExit {
        match self
            .instantiate_and_call(module, activation, cpu, Some(&module.entry))
            .await
        {
            Ok((store, _, code)) => {
                end(store);
                GuestExit::Exited(code)
            }
            Err(exit) => exit,
        }
    }

    /// Ends the instance of an activation on its request's task, after the answer where that
    /// is safe: a language engine's store is dropped by a task of its own, which tokio runs
    /// next on the same worker, once the request's task has handed the answer to its
    /// connection. Resetting an engine's memory to its image is most of a warm activation's
    /// teardown, and nothing of the answer waits for it; the store keeps the guest's CPU slot
    /// until then, so the teardown still counts against the computing guests. Engines' memories
    /// are made on demand. A pooled instance's slot must be free again before the service
    /// gives its admission back, so every other store is dropped here.
    fn end_after_answer(&self, module: &PreparedModule, store: Store<RunState>) {
        if Engine::same(module.pre.module().engine(), &self.image_engine) {
            tokio::spawn(async move { drop(store) });
        } else {
            drop(store);
        }
    }

    /// Instantiates `module` in a fresh store, writes its snapshot into the instance and calls
    /// `entry` (none: calls nothing); the store and instance stay for the caller to read.
    async fn instantiate_and_call(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        cpu: CpuSlot,
        entry: Option<&str>,
    ) -> Result<(Store<RunState>, Instance, i32), GuestExit> {
        let mut store = self
            .new_store(module, activation, cpu)
            .map_err(|error| GuestExit::HostFailure(format!("{error:#}")))?;
        let result = async {
            kept_memory::prefer(module.spec.state.as_ref().map(|state| &state.image));
            let instance = module.pre.instantiate_async(&mut store).await?;
            if let Some(state) = &module.spec.state {
                restore(&mut store, &instance, state)?;
            }
            let Some(entry) = entry else {
                return Ok((instance, 0));
            };
            let func = instance
                .get_func(&mut store, entry)
                .ok_or_else(|| wasmtime::format_err!("entry point `{entry}` vanished"))?;
            let mut results = vec![Val::I32(0); func.ty(&store).results().len()];
            func.call_async(&mut store, &[], &mut results).await?;
            wasmtime::Result::Ok((
                instance,
                match results.first() {
                    Some(Val::I32(code)) => *code,
                    _ => 0,
                },
            ))
        }
        .await;
        match result {
            Ok((instance, code)) => Ok((store, instance, code)),
            Err(error) => Err(classify_failure(error, store.data())),
        }
    }

    /// Links `module` against WASI and the imports of the capabilities in `set`, and
    /// pre-instantiates it.
    fn instantiate_pre(
        &self,
        module: &Module,
        set: GrantSet,
    ) -> Result<InstancePre<RunState>, PrepareError> {
        let mut linker: Linker<RunState> = Linker::new(module.engine());
        wasmtime_wasi::p1::add_to_linker_async(&mut linker, |s: &mut RunState| &mut s.wasi)
            .map_err(|e| PrepareError::Internal(e.into()))?;
        poll::add_to_linker(&mut linker).map_err(|e| PrepareError::Internal(e.into()))?;
        random::add_to_linker(&mut linker).map_err(|e| PrepareError::Internal(e.into()))?;
        descriptors::add_to_linker(&mut linker).map_err(|e| PrepareError::Internal(e.into()))?;
        capabilities::add_to_linker(&mut linker, set)
            .map_err(|e| PrepareError::Internal(e.into()))?;
        check_imports(module.engine(), &linker, module)?;
        linker
            .instantiate_pre(module)
            .map_err(|e| PrepareError::Invalid(format!("the module cannot be linked: {e:#}")))
    }

    fn new_store(
        &self,
        module: &PreparedModule,
        activation: &Activation,
        cpu: CpuSlot,
    ) -> wasmtime::Result<Store<RunState>> {
        let clock_origin = Instant::now();
        let mut wasi = WasiCtxBuilder::new();
        wasi.monotonic_clock(GuestMonotonicClock {
            origin: clock_origin,
        })
        .arg(&activation.program_name)
        .arg(&activation.params)
        .envs(&activation.env)
        .stdin(MemoryInputPipe::new(activation.params.clone()))
        .stdout(CaptureStream {
            stream: Stream::Stdout,
            capture: Arc::clone(&activation.output),
        })
        .stderr(CaptureStream {
            stream: Stream::Stderr,
            capture: Arc::clone(&activation.output),
        })
        // Only guests on a pool thread have a directory, the one thing that blocks: block right
        // there (and be interrupted by the unblocker) rather than on another thread.
        .allow_blocking_current_thread(true);
        capabilities::preopen(&mut wasi, &module.spec.grants)?;
        let state = RunState {
            wasi: wasi.build_p1(),
            opened: OpenedDescriptors::default(),
            limiter: MemoryLimiter {
                limit_bytes: module.spec.memory_limit_bytes,
                exceeded: false,
            },
            net: module.spec.grants.get::<HttpGetter>(),
            deadline: activation.deadline,
            clock_origin,
            held: HeldBody::default(),
            cpu,
        };
        let mut store = Store::new(module.pre.module().engine(), state);
        store.limiter(|s| &mut s.limiter);
        engine::arm_deadline(&mut store, activation.deadline);
        Ok(store)
    }
}

/// A portable module compiled by `engine`, or taken from its `cache`.
fn compile(
    engine: &Engine,
    cache: &DiskCache,
    wasm: &[u8],
    sha256: &str,
) -> Result<Module, PrepareError> {
    let (module, source) = cache
        .load_or_compile(
            sha256,
            // SAFETY: the cache hands over an entry only after its MAC verified: written by this
            // cache from a module this engine compiled.
            |bytes| Ok(unsafe { Module::deserialize(engine, bytes) }?),
            || Ok(Module::new(engine, wasm)?),
            |module| Ok(module.serialize()?),
        )
        .map_err(|e| PrepareError::Invalid(format!("the module does not compile: {e:#}")))?;
    tracing::debug!(?source, sha256, "portable module ready");
    Ok(module)
}

/// Puts `state` in a fresh instance: its globals, its memory grown to the state's size (within
/// the container's limit) and its memory image, mapped where the memory is one of this
/// backend's own (a language engine's), else copied.
fn restore(
    store: &mut Store<RunState>,
    instance: &Instance,
    state: &InstanceState,
) -> wasmtime::Result<()> {
    for (name, value) in &state.globals {
        let global = instance.get_global(&mut *store, name).ok_or_else(|| {
            wasmtime::format_err!("the snapshot's global `{name}` is not exported")
        })?;
        let value = match *value {
            GlobalValue::I32(v) => Val::I32(v),
            GlobalValue::I64(v) => Val::I64(v),
            GlobalValue::F32(bits) => Val::F32(bits),
            GlobalValue::F64(bits) => Val::F64(bits),
        };
        global.set(&mut *store, value)?;
    }
    let memory = instance
        .get_memory(&mut *store, "memory")
        .ok_or_else(|| wasmtime::format_err!("the module exports no memory `memory`"))?;
    let pages = memory.size(&*store);
    if state.memory_pages > pages {
        memory.grow(&mut *store, state.memory_pages - pages)?;
    }
    let installed = NonNull::new(memory.data_ptr(&*store))
        .and_then(|base| kept_memory::install(base, memory.data_size(&*store), &state.image));
    let written = installed.unwrap_or_else(|| state.image.copy_into(memory.data_mut(&mut *store)));
    written.map_err(|e| wasmtime::format_err!("the action's memory image: {e}"))
}

/// The instance's exported mutable globals and its memory `memory`.
fn read_image(store: &mut Store<RunState>, instance: &Instance) -> InstanceImage {
    let exports: Vec<(String, Extern)> = instance
        .exports(&mut *store)
        .map(|export| (export.name().to_owned(), export.into_extern()))
        .collect();
    let mut image = InstanceImage::default();
    for (name, export) in exports {
        match export {
            Extern::Global(global) if global.ty(&*store).mutability() == Mutability::Var => {
                let value = match global.get(&mut *store) {
                    Val::I32(v) => GlobalValue::I32(v),
                    Val::I64(v) => GlobalValue::I64(v),
                    Val::F32(bits) => GlobalValue::F32(bits),
                    Val::F64(bits) => GlobalValue::F64(bits),
                    _ => continue,
                };
                image.globals.push((name, value));
            }
            Extern::Memory(memory) if name == "memory" => {
                image.memory = memory.data(&*store).to_vec();
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
            ExternType::Func(ty) => ExportKind::Function {
                params: ty.params().len(),
            },
            _ => ExportKind::Other,
        };
        (export.name(), kind)
    });
    resolve_entry(exports, requested)
}

/// Names the first import the linker does not provide, with a hint when an annotation would.
fn check_imports(
    engine: &Engine,
    linker: &Linker<RunState>,
    module: &Module,
) -> Result<(), PrepareError> {
    let mut probe = Store::new(
        engine,
        RunState {
            wasi: WasiCtxBuilder::new().build_p1(),
            opened: OpenedDescriptors::default(),
            limiter: MemoryLimiter {
                limit_bytes: 0,
                exceeded: false,
            },
            net: None,
            deadline: Instant::now(),
            clock_origin: Instant::now(),
            held: HeldBody::default(),
            cpu: CpuSlot::detached(),
        },
    );
    for import in module.imports() {
        if matches!(import.ty(), ExternType::Func(_))
            && linker.get_by_import(&mut probe, &import).is_none()
        {
            return Err(PrepareError::missing_import(import.module(), import.name()));
        }
    }
    Ok(())
}

fn classify_failure(error: wasmtime::Error, state: &RunState) -> GuestExit {
    if let Some(exit) = error.downcast_ref::<I32Exit>() {
        return GuestExit::Exited(exit.0);
    }
    if state.limiter.exceeded {
        return GuestExit::MemoryExhausted;
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => GuestExit::TimedOut,
        // The trap is the summary; the guest's backtrace, when wasmtime recorded one, follows it.
        Some(trap) => match error.downcast_ref::<wasmtime::WasmBacktrace>() {
            Some(backtrace) => GuestExit::Trapped(format!("{trap}\n{backtrace}")),
            None => GuestExit::Trapped(trap.to_string()),
        },
        None => GuestExit::Trapped(format!("{error:#}")),
    }
}

//! The executor's operations — init, run, destroy, logs — independent of HTTP: decoding and
//! trust checks, limits and capabilities, the blocking pool, the backend, and the answers.

use std::{
    collections::BTreeMap,
    panic::AssertUnwindSafe,
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use futures_util::FutureExt;
use tracing::Instrument;
use wasm_artifact::{TrustedKeys, host_target};
use wasm_executor_decode::sources::{self, ActionCode};

use crate::{
    backend::{
        Activation, Backend, BackendSettings, GuestExit, InstanceState, ModuleSpec, PrepareError,
        PrepareInput, snapshot::PAGE_BYTES,
    },
    capability::{
        Capabilities,
        allow_list::AllowList,
        dir::{DirCapability, GrantRoot, check_namespace},
        net_access::NetAccess,
    },
    code::{self, ModuleCode},
    config::{Config, GuestExecution},
    connection_threads::ConnectionThreads,
    error::ServiceError,
    host_io,
    language::{self, Engines, Language},
    logs::{CapturedLine, LogBudget, OutputCapture, PendingLogs},
    metrics::Metrics,
    namespace_volumes::Volumes,
    net::HttpClient,
    outcome::{self, RunResponse},
    pool::{ExecutionPool, PoolError},
    protocol::{InitRequest, Limits as InitLimits, RunRequest, check_env, env_text},
    registry::{Lookup, Registry, Reserve},
    shared_code::{SharedCode, Upload},
    state::Directories,
};

pub const MORE_THAN_ONCE: &str = "Cannot initialize the action more than once.";
pub const MISSING_CODE: &str = "Missing main/no code to execute.";

/// A container's limits, fixed at /init.
struct ContainerLimits {
    memory_mb: u64,
    timeout: Duration,
    log_bytes: usize,
}

/// What an upload loads to: a module's code, or an engine's code with the state the action's
/// instances start from and what its code printed while it was taken.
pub struct LoadedCode<C> {
    code: Arc<C>,
    state: Option<Arc<InstanceState>>,
    init_output: Vec<CapturedLine>,
    /// For a state file: the language and `main` it was pre-initialised for, which every
    /// /init that shares it must agree with.
    state_of: Option<(String, String)>,
}

/// How an upload is loaded.
enum Loading {
    /// A Wasm module: decoded, verified and compiled.
    Module,
    /// Source for an engine: its init document pre-initialised (or its kept state reused).
    Document {
        language: Language,
        main: String,
        namespace: String,
    },
    /// A state file made ahead of time (decoded already, unless another /init found it
    /// loading): checked against the engine.
    State {
        language: Language,
        main: Option<String>,
        file: Option<bytes::Bytes>,
    },
}

/// An initialized container: its prepared module and everything fixed at /init.
pub struct Container<B: Backend> {
    /// Keeps the upload's loaded code shared while the container lives.
    _upload: Arc<Upload<LoadedCode<B::Code>>>,
    module: B::Module,
    program_name: String,
    env: Vec<(String, String)>,
    timeout: Duration,
    log_limit_bytes: usize,
    logs: PendingLogs,
}

/// The executor's state and operations over backend `B`.
pub struct Executor<B: Backend> {
    backend: Arc<B>,
    pool: ExecutionPool,
    containers: Registry<Container<B>>,
    uploads: SharedCode<LoadedCode<B::Code>>,
    /// The language engines, each loaded at its first action.
    engines: Engines<B::Code>,
    /// What annotations may ask for, and which namespaces may have it.
    capabilities: Capabilities,
    log_budget: Arc<LogBudget>,
    config: Config,
    trusted_keys: TrustedKeys,
    target: String,
    /// Names this process: it differs after every restart, so a client that sees it change
    /// knows that the containers it initialized are gone.
    instance: String,
    /// Where the server serves connections while it may (`--connection-threads`), for the
    /// builds whose guests block their thread.
    connection_threads: Option<Arc<ConnectionThreads>>,
    pub metrics: Metrics,
}

impl<B: Backend> Executor<B> {
    pub fn new(
        config: Config,
        trusted_keys: TrustedKeys,
        mounts_isolated: Result<(), String>,
    ) -> anyhow::Result<Self> {
        let dirs = Directories::of(&config)?;
        let host_io = host_io::start()?;
        let backend = B::new(&BackendSettings {
            cache_dir: dirs.cache.clone(),
            max_cache_bytes: config.max_cache_mb << 20,
            max_instances: config.instance_slots(),
            min_instances: config.instance_slots().min(config.max_concurrent + 1),
            max_memory_bytes: config.max_memory_mb << 20,
            // More than a whole memory would keep nothing more resident.
            keep_resident_bytes: config
                .keep_resident_kib
                .saturating_mul(1024)
                .min(usize::try_from(config.max_memory_mb << 20).unwrap_or(usize::MAX)),
            host_io: host_io.clone(),
        })?;
        tracing::info!(
            state = %dirs.state.display(),
            cache = %dirs.cache.display(),
            grant_root = %dirs.grant_root.display(),
            "directories"
        );
        let (pool_threads, task_instances) = config.instance_split(backend.instance_capacity());
        if pool_threads < config.pool_threads {
            tracing::warn!(
                pool_threads,
                task_instances,
                "fewer instances than asked for: the pool and the guests on their tasks share them"
            );
        }
        let pool = ExecutionPool::new(
            pool_threads,
            config.max_concurrent,
            task_instances,
            config.queue_depth,
            config.guest_execution(),
        );
        let connection_threads = (config.guest_execution() == GuestExecution::Pool
            && config.connection_threads > 0)
            .then(|| ConnectionThreads::new(config.connection_threads));
        let client = Arc::new(HttpClient::new(
            config.net_allow.clone(),
            Duration::from_millis(config.net_timeout_ms),
            config.net_max_body_kb << 10,
            host_io,
        )?);
        let capabilities = Capabilities::default()
            .offer(
                DirCapability {
                    root: GrantRoot::open(&dirs.grant_root)?,
                    volumes: Volumes::new(&dirs.grant_root, config.dir_quota(), mounts_isolated)?,
                },
                AllowList::new(&config.dir_namespaces),
            )
            .offer(NetAccess { client }, AllowList::new(&config.net_namespaces));
        Ok(Executor {
            backend: Arc::new(backend),
            pool,
            containers: Registry::default(),
            uploads: SharedCode::new(u64::from_le_bytes(random_bytes("the upload index")?)),
            engines: Engines::new(
                config.js_engine.clone(),
                config.python_engine.clone(),
                Some(language::StateCache {
                    root: dirs.cache.clone(),
                    max_bytes: config.max_cache_mb << 20,
                }),
                trusted_keys.clone(),
            ),
            capabilities,
            log_budget: LogBudget::new(config.max_pending_log_mb << 20),
            config,
            trusted_keys,
            target: host_target(),
            // 128 random bits in hex.
            instance: hex::encode(random_bytes::<16>("the instance id")?),
            connection_threads,
            metrics: Metrics::default(),
        })
    }

    pub fn runtime_name(&self) -> &'static str {
        B::RUNTIME.name()
    }

    pub fn portable_modules(&self) -> &'static str {
        B::PORTABLE_MODULES.label()
    }

    /// Where guests run unless an action says otherwise (`--guest-execution`).
    pub fn guest_execution(&self) -> &'static str {
        self.config.guest_execution().label()
    }

    /// The threads the server serves connections on while it may, if this executor has them.
    pub fn connection_threads(&self) -> Option<Arc<ConnectionThreads>> {
        self.connection_threads.clone()
    }

    /// Whether this build can suspend a guest on its request's task (`--guest-execution async`).
    pub fn suspends_guests(&self) -> bool {
        B::SUSPENDS_GUESTS
    }

    pub fn runtime_version(&self) -> &'static str {
        B::RUNTIME.locked_version()
    }

    pub fn target(&self) -> &str {
        &self.target
    }

    pub fn instance(&self) -> &str {
        &self.instance
    }

    pub fn container_ids(&self) -> Vec<String> {
        self.containers.ids()
    }

    pub fn render_metrics(&self) -> String {
        self.metrics.render(
            self.containers.ready_count(),
            self.uploads.len(),
            &self.pool.occupancy(),
            self.connection_threads.as_ref().map_or(0, |t| t.threads()),
            self.log_budget.used_bytes(),
        )
    }

    pub async fn init(
        self: &Arc<Self>,
        id: &str,
        request: InitRequest<'_>,
        body: &Bytes,
    ) -> Result<(), ServiceError> {
        let started = Instant::now();
        let result = self
            .init_inner(id, request, body)
            .instrument(tracing::info_span!("init", container = id))
            .await;
        // Turned away before anything was tried (a 503, counted as a rejection by the API):
        // not an init that failed.
        if !matches!(
            result,
            Err(ServiceError::Overloaded(_) | ServiceError::Full(_))
        ) {
            self.metrics.init(result.is_ok(), started.elapsed());
        }
        match &result {
            Ok(()) => tracing::info!(
                container = id,
                took_us = started.elapsed().as_micros() as u64,
                "initialized"
            ),
            Err(error) => tracing::info!(container = id, %error, "init refused"),
        }
        result
    }

    async fn init_inner(
        self: &Arc<Self>,
        id: &str,
        request: InitRequest<'_>,
        body: &Bytes,
    ) -> Result<(), ServiceError> {
        let value = request.value.unwrap_or_default();
        let binary = value.binary;
        let code = value
            .code
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| ServiceError::Refused(MISSING_CODE.into()))?;
        let language =
            Language::of_kind(value.kind.as_deref()).map_err(ServiceError::InitFailed)?;
        let reservation = match self.containers.reserve(id, self.config.max_containers) {
            Reserve::Reserved(reservation) => reservation,
            Reserve::Taken => return Err(ServiceError::Refused(MORE_THAN_ONCE.into())),
            Reserve::Full => {
                return Err(ServiceError::Full(format!(
                    "the executor holds its maximum of {} containers; retry elsewhere",
                    self.config.max_containers
                )));
            }
        };
        let limits = self.container_limits(&value.limits)?;
        let namespace = value.namespace.as_deref();
        if let Some(namespace) = namespace {
            check_namespace(namespace).map_err(ServiceError::InitFailed)?;
        }
        let grants = self
            .capabilities
            .grant(namespace, &value.annotations)
            .await?;
        let main = value.main.filter(|m| !m.is_empty());
        let mut env: BTreeMap<String, String> = value
            .env
            .unwrap_or_default()
            .iter()
            .map(|(k, v)| (k.clone(), env_text(v)))
            .collect();
        env.insert("__OW_API_HOST".into(), self.config.api_host.clone());
        for (name, value) in &env {
            check_env(name, value).map_err(ServiceError::InitFailed)?;
        }
        let program_name = value.name.unwrap_or_else(|| id.to_owned());
        let spec = ModuleSpec {
            // A module's entry point; an engine's `main` is the action's function.
            entry: main
                .clone()
                .filter(|m| language.is_none() && m != "main" && m != "_start"),
            grants,
            memory_limit_bytes: limits.memory_mb << 20,
            state: None,
        };

        let (upload, loading) = match language {
            None => (self.uploads.upload(&code, body, binary), Loading::Module),
            // A state file a live container holds: nothing to decode (source sent as text,
            // `binary: false`, is never one).
            Some(language)
                if binary != Some(false)
                    && let Some(upload) = self.uploads.find_state(&code) =>
            {
                (
                    upload,
                    Loading::State {
                        language,
                        main,
                        file: None,
                    },
                )
            }
            Some(language) => match self.decode_sources(&code, binary)? {
                ActionCode::State(file) => (
                    self.uploads.upload_state(&code, body),
                    Loading::State {
                        language,
                        main,
                        file: Some(file),
                    },
                ),
                ActionCode::Source(sources) => {
                    let main = main.unwrap_or_else(|| "main".into());
                    let document = language::init_document(language, &main, &env, sources);
                    let namespace = env.get("__OW_NAMESPACE").cloned().unwrap_or_default();
                    (
                        self.uploads.upload_document(document),
                        Loading::Document {
                            language,
                            main,
                            namespace,
                        },
                    )
                }
            },
        };
        let (module, loaded) = match upload.loaded() {
            // Seen before: linking the shared code is all that is left, right here.
            Some(loaded) => {
                let loaded = loaded?;
                (self.link_loaded(&loaded, &loading, spec)?, loaded)
            }
            None => self.load_and_link(&upload, loading, spec).await?,
        };
        let logs = PendingLogs::new(Arc::clone(&self.log_budget));
        logs.hold_init_output(&loaded.init_output);
        reservation
            .commit(Container {
                _upload: upload,
                module,
                program_name,
                env: env.into_iter().collect(),
                timeout: limits.timeout,
                log_limit_bytes: limits.log_bytes,
                logs,
            })
            .map_err(|_| {
                ServiceError::NotFound(format!("container {id} was destroyed while it initialized"))
            })
    }

    /// The container's limits from its /init, within the operator's maxima (a value beyond
    /// them is refused, never clipped silently).
    fn container_limits(&self, asked: &InitLimits) -> Result<ContainerLimits, ServiceError> {
        let config = &self.config;
        let within = |what: &str, value: u64, min: u64, max: u64, unit: &str| {
            if (min..=max).contains(&value) {
                Ok(value)
            } else {
                Err(ServiceError::InitFailed(format!(
                    "the {what} limit of {value} {unit} is outside what this executor allows ({min} to {max} {unit})"
                )))
            }
        };
        let memory_mb = within(
            "memory",
            asked.memory.unwrap_or(config.default_memory_mb),
            1,
            config.max_memory_mb,
            "MB",
        )?;
        let timeout_ms = within(
            "time",
            asked.timeout.unwrap_or(config.default_timeout_ms),
            1,
            config.max_timeout_ms,
            "ms",
        )?;
        let log_mb = within(
            "log",
            asked.logs.unwrap_or(config.default_log_mb),
            0,
            config.max_log_mb,
            "MB",
        )?;
        Ok(ContainerLimits {
            memory_mb,
            timeout: Duration::from_millis(timeout_ms),
            log_bytes: usize::try_from(log_mb << 20).unwrap_or(usize::MAX),
        })
    }

    /// Loads the upload on the blocking pool (or waits there for an /init of the same upload
    /// that is loading it) and links it, within the operator's time for an /init: a module is
    /// decoded and compiled, an engine's init document pre-initialised, a state file checked.
    /// The /init is answered at that time even if the load goes on (a compilation cannot be
    /// interrupted), so the load runs apart from the request's thread.
    async fn load_and_link(
        self: &Arc<Self>,
        upload: &Arc<Upload<LoadedCode<B::Code>>>,
        loading: Loading,
        spec: ModuleSpec,
    ) -> Result<(B::Module, Arc<LoadedCode<B::Code>>), ServiceError> {
        let engine = match &loading {
            Loading::Module => None,
            Loading::Document { language, .. } | Loading::State { language, .. } => {
                Some(self.engine(*language).await?)
            }
        };
        let executor = Arc::clone(self);
        let upload = Arc::clone(upload);
        let max_init = Duration::from_millis(self.config.max_init_ms);
        let preparing = self.pool.run_apart(move |cpu| {
            let loaded = upload.load(|text, binary| {
                let (engine, state, state_of) = match (&loading, engine) {
                    (
                        Loading::Document {
                            main, namespace, ..
                        },
                        Some(engine),
                    ) => {
                        let action = language::ActionSource {
                            document: text,
                            main,
                            namespace,
                        };
                        let state = language::pre_initialize_or_reuse(
                            executor.backend.as_ref(),
                            &engine,
                            action,
                            spec.memory_limit_bytes,
                            max_init,
                            cpu,
                        )?;
                        (engine, state, None)
                    }
                    (Loading::State { file, .. }, Some(engine)) => {
                        let decoded;
                        let file = match file {
                            Some(file) => file,
                            None => match executor.decode_sources(text, binary)? {
                                ActionCode::State(file) => {
                                    decoded = file;
                                    &decoded
                                }
                                ActionCode::Source(_) => {
                                    return Err(ServiceError::Internal(
                                        "a state upload's text is not a state file".into(),
                                    ));
                                }
                            },
                        };
                        let max_memory = executor.config.max_memory_mb << 20;
                        let (state, state_of) =
                            language::with_state_file(file, max_memory, |file, writes| {
                                let state_of = (file.language.clone(), file.main.clone());
                                check_state_use(&state_of, &loading)?;
                                let state = engine.restore_state(file, writes.iter().copied())?;
                                Ok::<_, ServiceError>((state, state_of))
                            })?;
                        (engine.clone(), state, Some(state_of))
                    }
                    _ => {
                        return Ok(LoadedCode {
                            code: Arc::new(executor.load(text, binary)?),
                            state: None,
                            init_output: Vec::new(),
                            state_of: None,
                        });
                    }
                };
                Ok(LoadedCode {
                    code: Arc::clone(&engine.code),
                    state: Some(state.state),
                    init_output: state.output,
                    state_of,
                })
            })?;
            Ok((executor.link_loaded(&loaded, &loading, spec)?, loaded))
        });
        tokio::time::timeout(max_init, preparing)
            .await
            .map_err(|_| {
                ServiceError::InitFailed(format!(
                    "preparing the module took longer than this executor allows ({} ms)",
                    max_init.as_millis()
                ))
            })??
    }

    /// Loads the configured language engines in the background as the executor starts, so the
    /// first action in a language does not wait for its engine to compile (an /init that
    /// arrives meanwhile waits for the load under way).
    pub fn preload_engines(self: &Arc<Self>) {
        for language in self.engines.configured() {
            let executor = Arc::clone(self);
            tokio::spawn(async move {
                if let Err(error) = executor.engine(language).await {
                    tracing::error!(%error, language = language.name(), "an engine does not load");
                }
            });
        }
    }

    /// The engine of `language`, loaded on the pool once per executor (compiled, or read from
    /// the cache), outside any action's time for an /init; apart from the request's thread,
    /// as a compilation is not interrupted when the executor stops.
    async fn engine(
        self: &Arc<Self>,
        language: Language,
    ) -> Result<Arc<language::Engine<B::Code>>, ServiceError> {
        let executor = Arc::clone(self);
        self.pool
            .run_apart(move |_cpu| {
                executor.engines.engine(
                    language,
                    executor.backend.as_ref(),
                    executor.config.max_memory_mb << 20,
                    Instant::now() + Duration::from_millis(executor.config.max_init_ms),
                )
            })
            .await?
    }

    /// Decodes, verifies and loads an upload's module, and logs how long each step took. Runs on
    /// the blocking pool.
    fn load(&self, text: &str, binary: Option<bool>) -> Result<B::Code, ServiceError> {
        let init_failed = |e: &dyn std::fmt::Display| ServiceError::InitFailed(e.to_string());
        let started = Instant::now();
        let decoded = code::decode(text, binary, self.config.max_module_mb << 20)
            .map_err(|e| init_failed(&e))?;
        let module = decoded.module().map_err(|e| init_failed(&e))?;
        let decoded_at = Instant::now();
        let input = match &module {
            ModuleCode::Portable { wasm, sha256 } => PrepareInput::Portable { wasm, sha256 },
            ModuleCode::Precompiled(envelope) => {
                envelope
                    .verify(
                        B::RUNTIME,
                        &self.target,
                        &self.trusted_keys,
                        self.config.allow_unsigned_artifacts,
                    )
                    .map_err(|e| init_failed(&e))?;
                PrepareInput::Precompiled(envelope)
            }
        };
        let verified_at = Instant::now();
        let code = self.backend.load(input).map_err(prepare_failed)?;
        let micros = |from: Instant, to: Instant| to.duration_since(from).as_micros() as u64;
        tracing::info!(
            code_chars = text.len(),
            decode_us = micros(started, decoded_at),
            verify_us = micros(decoded_at, verified_at),
            load_us = micros(verified_at, Instant::now()),
            "module loaded"
        );
        Ok(code)
    }

    /// The code of an action in a language: its sources or its state file.
    fn decode_sources(&self, code: &str, binary: Option<bool>) -> Result<ActionCode, ServiceError> {
        sources::decode(code, binary, self.config.max_module_mb << 20)
            .map_err(|e| ServiceError::InitFailed(e.to_string()))
    }

    /// Links loaded code for one container's grants and entry point: an engine's with the
    /// action's state, which must fit the container's memory and, for a state file, its /init.
    fn link_loaded(
        &self,
        loaded: &LoadedCode<B::Code>,
        loading: &Loading,
        mut spec: ModuleSpec,
    ) -> Result<B::Module, ServiceError> {
        if let Some(state_of) = &loaded.state_of {
            check_state_use(state_of, loading)?;
        }
        if let Some(state) = &loaded.state {
            let needed = state.memory_pages * PAGE_BYTES as u64;
            if needed > spec.memory_limit_bytes {
                return Err(ServiceError::InitFailed(format!(
                    "Initialization has failed: the action's state needs {} MB of memory, more than its limit of {} MB",
                    needed.div_ceil(1 << 20),
                    spec.memory_limit_bytes >> 20
                )));
            }
            spec.state = Some(Arc::clone(state));
        }
        self.backend
            .link(&loaded.code, &spec)
            .map_err(prepare_failed)
    }

    pub async fn run(
        self: &Arc<Self>,
        id: &str,
        request: RunRequest,
    ) -> Result<RunResponse, ServiceError> {
        let container = match self.containers.lookup(id) {
            Lookup::Ready(container) => container,
            Lookup::Initializing => {
                return Err(ServiceError::NotFound(format!(
                    "container {id} is still initializing"
                )));
            }
            Lookup::Unknown => {
                return Err(ServiceError::NotFound(format!(
                    "container {id} is not initialized"
                )));
            }
        };
        let activation_id = request
            .context
            .get("activation_id")
            .map(env_text)
            .unwrap_or_default();
        // At debug level: an enabled span per activation costs more than a no-op guest's run.
        let span = tracing::debug_span!("run", container = id, activation = %activation_id);
        let started = Instant::now();
        let (activation, limit) = self.activation(&container, request)?;
        let timeout_ms = limit.as_millis() as u64;
        let on_task = self.config.guest_execution() == GuestExecution::Async
            && self.backend.runs_on_task(&container.module);
        let response = if on_task {
            self.run_on_task(&container, activation, timeout_ms)
                .instrument(span.clone())
                .await?
        } else {
            let backend = Arc::clone(&self.backend);
            self.pool
                .run(move |cpu| {
                    let exit = backend.run(&container.module, &activation, cpu);
                    conclude(exit, &activation, &container, timeout_ms)
                })
                .instrument(span.clone())
                .await?
        };
        let took = started.elapsed();
        let outcome = response.outcome();
        self.metrics.activation(outcome, took);
        span.in_scope(|| {
            tracing::debug!(
                outcome = outcome.label(),
                took_us = took.as_micros() as u64,
                "activation ended"
            )
        });
        Ok(response)
    }

    /// Runs an activation on the request's own task once admitted (an instance, then a CPU
    /// slot): no hand-off to another thread or task. A panic in it is an internal error; a
    /// client that goes away cancels it, which frees its instance and slot at once.
    async fn run_on_task(
        &self,
        container: &Container<B>,
        activation: Activation,
        timeout_ms: u64,
    ) -> Result<RunResponse, ServiceError> {
        let admitted = self.pool.admit_task().await?;
        let running = self
            .backend
            .run_on_task(&container.module, &activation, admitted.cpu);
        let exit = AssertUnwindSafe(running)
            .catch_unwind()
            .await
            .map_err(|_| ServiceError::from(PoolError::WorkerLost))?;
        drop(admitted.instance);
        Ok(conclude(exit, &activation, container, timeout_ms))
    }

    /// The activation for the backend, and its time limit: what remains until the run's
    /// `deadline`, else the container's timeout. A context field that cannot be an environment
    /// variable is the request's fault. The parameters' text goes to the guest as it arrived.
    fn activation(
        &self,
        container: &Container<B>,
        request: RunRequest,
    ) -> Result<(Activation, Duration), ServiceError> {
        // Later entries win: the run's __OW_* override the init's.
        let mut env: BTreeMap<String, String> = container.env.iter().cloned().collect();
        for (name, value) in request.activation_env() {
            check_env(&name, &value).map_err(ServiceError::BadRequest)?;
            env.insert(name, value);
        }
        // A deadline beyond the operator's maximum is held to it.
        let limit = match request.deadline_epoch_ms() {
            Some(epoch_ms) => Duration::from_millis(
                epoch_ms
                    .saturating_sub(now_epoch_ms())
                    .min(self.config.max_timeout_ms),
            ),
            None => container.timeout,
        };
        let activation = Activation {
            program_name: container.program_name.clone(),
            params: String::from(Box::<str>::from(request.value)),
            env: env.into_iter().collect(),
            deadline: Instant::now() + limit,
            output: OutputCapture::new(container.log_limit_bytes, self.max_result_bytes()),
        };
        Ok((activation, limit))
    }

    fn max_result_bytes(&self) -> usize {
        self.config.max_result_mb << 20
    }

    pub fn destroy(&self, id: &str) -> Result<(), ServiceError> {
        if self.containers.remove(id) {
            tracing::info!(container = id, "destroyed");
            Ok(())
        } else {
            Err(ServiceError::NotFound(format!(
                "container {id} does not exist"
            )))
        }
    }

    pub fn logs(&self, id: &str) -> Result<String, ServiceError> {
        match self.containers.lookup(id) {
            Lookup::Ready(container) => Ok(container.logs.drain()),
            // It exists, and nothing has run in it yet.
            Lookup::Initializing => Ok(String::new()),
            Lookup::Unknown => Err(ServiceError::NotFound(format!(
                "container {id} does not exist"
            ))),
        }
    }
}

/// The answer to an activation that ended with `exit`; its output goes to the container's logs.
fn conclude<B: Backend>(
    exit: GuestExit,
    activation: &Activation,
    container: &Container<B>,
    timeout_ms: u64,
) -> RunResponse {
    let mut captured = activation.output.finish();
    let response = outcome::interpret(exit, &mut captured, timeout_ms);
    container.logs.append_activation(captured);
    response
}

/// Whether an /init may use a state file pre-initialised for `state_of` (its language and
/// `main`): of a kind of that language, with that `main` or the default.
fn check_state_use(state_of: &(String, String), loading: &Loading) -> Result<(), ServiceError> {
    let Loading::State { language, main, .. } = loading else {
        return Ok(());
    };
    let (file_language, file_main) = state_of;
    if file_language != language.name() {
        return Err(ServiceError::InitFailed(format!(
            "Initialization has failed: the action was pre-initialised for the {file_language} engine; create it with a kind of that language, not a {} kind",
            language.name()
        )));
    }
    if let Some(main) = main.as_deref().filter(|m| *m != "main" && m != file_main) {
        return Err(ServiceError::InitFailed(format!(
            "Initialization has failed: the action was pre-initialised with main `{file_main}`, not `{main}`; pre-initialise it again with --main {main}"
        )));
    }
    Ok(())
}

/// A backend's refusal is the module's fault (the /init failed), unless it says otherwise.
fn prepare_failed(error: PrepareError) -> ServiceError {
    match error {
        PrepareError::Internal(error) => ServiceError::Internal(format!("{error:#}")),
        other => ServiceError::InitFailed(other.to_string()),
    }
}

/// `N` random bytes from the operating system, for `purpose`.
fn random_bytes<const N: usize>(purpose: &str) -> anyhow::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| anyhow::anyhow!("no randomness for {purpose}: {e}"))?;
    Ok(bytes)
}

fn now_epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

//! Actions in a language the executor runs on an engine that is itself a Wasm module
//! (JavaScript on QuickJS-NG, `actions/quickjs`; Python on CPython, `actions/python`): which
//! kinds they are, each engine loaded once per executor, and each action's pre-initialisation
//! into a snapshot.
//!
//! The engine's mutable globals are exported once and its data lifted out into a memory image
//! (`executor/engine-module`), then it is compiled like any module (on WAMR, which interprets
//! portable modules, its AOT artifact beside it is taken instead when there is one). An
//! action's /init evaluates its code in a fresh engine instance (the export
//! `wizer-initialize`, the init document on stdin) and keeps what that instance changed, as a [`Snapshot`], and as the action's memory image,
//! the engine's with the changed pages over it; its containers share the engine's compiled code
//! and that image, and every activation starts from it. Snapshots are kept on disk by engine
//! and init document, so an action's top level runs once per machine, not once per executor
//! process; an action pre-initialised ahead of time arrives as its state file and is checked
//! against the engine.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use serde::Deserialize;
use wasm_artifact::TrustedKeys;
use wasm_executor_decode::{
    snapshot_file::{PrintedLine, StateFile, StateFileError},
    sources::Sources,
};
use wasm_executor_engine_module as engine_module;

use crate::{
    backend::{
        Activation, Backend, GuestExit, InstanceState, ModuleSpec, PortableModules, PrepareInput,
        disk_cache::DiskCache,
        memory_image::MemoryImage,
        snapshot::{GlobalValue, InstanceImage, PAGE_BYTES, Snapshot},
    },
    capability::Grants,
    engine_artifact,
    engine_start::{START_EXPORT, StartedEngines, exports_start},
    error::ServiceError,
    logs::{CapturedLine, OutputCapture, Stream},
    pool::CpuSlot,
};

/// The export that evaluates an action's code into the engine's state.
pub const INIT_EXPORT: &str = "wizer-initialize";
/// Output kept from a pre-initialisation (its last stdout line says how it went).
const INIT_OUTPUT_BYTES: usize = 1 << 20;
/// Characters of the engine's stderr an /init's error quotes (its end, where the error is).
const QUOTED_STDERR_CHARS: usize = 2000;

/// A language of actions that run on an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    JavaScript,
    Python,
}

impl Language {
    /// The language of an OpenWhisk kind: `nodejs` (any version), `javascript` or `js` is
    /// JavaScript, `python` or `python3` (any version) Python; no kind, `wasm:*` or `blackbox`
    /// is a WebAssembly module (`None`); any other kind is refused by name.
    pub fn of_kind(kind: Option<&str>) -> Result<Option<Language>, String> {
        let Some(kind) = kind.map(str::trim).filter(|k| !k.is_empty()) else {
            return Ok(None);
        };
        let family = kind.split(':').next().unwrap_or(kind).to_ascii_lowercase();
        match family.as_str() {
            "wasm" | "blackbox" => Ok(None),
            "nodejs" | "javascript" | "js" => Ok(Some(Language::JavaScript)),
            "python" | "python3" => Ok(Some(Language::Python)),
            _ => Err(format!(
                "this executor runs actions of kind wasm:* (WebAssembly modules), nodejs:* (JavaScript) and python:* (Python), not {kind}"
            )),
        }
    }

    pub const ALL: [Language; 2] = [Language::JavaScript, Language::Python];

    pub fn name(self) -> &'static str {
        match self {
            Language::JavaScript => "JavaScript",
            Language::Python => "Python",
        }
    }

    /// The executor's option naming the engine, and the engine `actions/build.sh` builds.
    fn engine_option(self) -> (&'static str, &'static str) {
        match self {
            Language::JavaScript => ("--js-engine", "actions/dist/quickjs.wasm"),
            Language::Python => ("--python-engine", "actions/dist/python.wasm"),
        }
    }
}

/// The variables OpenWhisk's invoker puts in an /init's environment that belong to the
/// activation which caused it, not to the action: every container's /init has other values.
/// The top level, which runs once for all containers of an action, does not see them (`main`
/// does, each activation its own).
pub const PER_ACTIVATION_ENV: [&str; 3] =
    ["__OW_ACTIVATION_ID", "__OW_TRANSACTION_ID", "__OW_DEADLINE"];

/// What pre-initialisation gives the engine on stdin: the language (so that documents, the
/// key of shared snapshots, differ between engines), the entry function's name, the action's
/// environment at /init (less [`PER_ACTIVATION_ENV`], so that the containers of one action
/// share its snapshot), and its sources.
pub fn init_document(
    language: Language,
    main: &str,
    env: &BTreeMap<String, String>,
    sources: Sources,
) -> String {
    let env: BTreeMap<&String, &String> = env
        .iter()
        .filter(|(name, _)| !PER_ACTIVATION_ENV.contains(&name.as_str()))
        .collect();
    let mut document = serde_json::json!({ "language": language.name(), "main": main, "env": env });
    match sources {
        Sources::Text(code) => document["code"] = code.into(),
        Sources::Files(files) => document["files"] = serde_json::json!(files),
    }
    document.to_string()
}

/// A language's engine in this executor: loaded (compiled, or taken from the cache) once,
/// with the state its instances start from (its data as a memory image) and the image of a
/// fresh instance that snapshots are taken against.
pub struct Engine<C> {
    pub language: Language,
    pub code: Arc<C>,
    /// SHA-256 of the engine's file: state files name the engine they were taken on by it.
    pub sha256: String,
    /// What every instance of the engine starts with, unless an action's state replaces it.
    base: Arc<InstanceState>,
    fresh: InstanceImage,
    /// The most memory an instance may have in this executor.
    max_memory_bytes: u64,
    /// The snapshots this engine's actions were pre-initialised into, by init document; none
    /// when the cache cannot be opened (then every executor process takes its own).
    states: Option<Arc<DiskCache>>,
    /// The engine started per namespace, when it exports `start-engine`: where its actions'
    /// pre-initialisations start.
    starts: Option<StartedEngines>,
}

/// Where snapshots are kept on disk: under the executor's cache root, bounded like the cache
/// of compiled modules.
#[derive(Clone)]
pub struct StateCache {
    pub root: PathBuf,
    pub max_bytes: u64,
}

/// The engines this executor was given (by [`Language`], in the order of `Language::ALL`),
/// each loaded at its first use.
pub struct Engines<C> {
    paths: [Option<PathBuf>; 2],
    loaded: [OnceLock<Result<Arc<Engine<C>>, ServiceError>>; 2],
    states: Option<StateCache>,
    /// The keys a signed engine artifact must be signed by (`engine_artifact.rs`).
    trusted_keys: TrustedKeys,
}

impl<C> Engines<C> {
    pub fn new(
        javascript: Option<PathBuf>,
        python: Option<PathBuf>,
        states: Option<StateCache>,
        trusted_keys: TrustedKeys,
    ) -> Self {
        Engines {
            paths: [javascript, python],
            loaded: [OnceLock::new(), OnceLock::new()],
            states,
            trusted_keys,
        }
    }

    /// The languages whose engine this executor was given.
    pub fn configured(&self) -> impl Iterator<Item = Language> + '_ {
        Language::ALL
            .into_iter()
            .filter(|language| self.paths[*language as usize].is_some())
    }
}

/// How an engine's instance is linked: no grants (pre-initialisation reads nothing but its
/// stdin), the memory limit given, starting from `state`.
fn bare_spec(memory_limit_bytes: u64, state: Option<Arc<InstanceState>>) -> ModuleSpec {
    ModuleSpec {
        entry: None,
        grants: Grants::default(),
        memory_limit_bytes,
        state,
    }
}

fn activation(document: String, deadline: Instant) -> Activation {
    Activation {
        program_name: "engine".into(),
        params: document,
        env: Vec::new(),
        deadline,
        output: OutputCapture::new(INIT_OUTPUT_BYTES, INIT_OUTPUT_BYTES),
    }
}

/// A guest's end during pre-initialisation, as an /init's error.
fn init_failure(exit: GuestExit, stderr: &str) -> String {
    let how = match exit {
        GuestExit::Exited(code) => format!("exited with status {code}"),
        GuestExit::Trapped(trap) => format!("trapped: {}", trap.lines().next().unwrap_or("")),
        GuestExit::TimedOut => "took longer than this executor allows for an /init".into(),
        GuestExit::MemoryExhausted => "exhausted the action's memory".into(),
        GuestExit::HostFailure(reason) => format!("could not run: {reason}"),
    };
    let stderr = stderr.trim();
    let skip = stderr.chars().count().saturating_sub(QUOTED_STDERR_CHARS);
    let stderr: String = stderr.chars().skip(skip).collect();
    if stderr.is_empty() {
        format!("Initialization has failed: the engine {how}")
    } else {
        format!("Initialization has failed: the engine {how}: {stderr}")
    }
}

/// The engine's own report of a pre-initialisation: its last stdout line.
#[derive(Deserialize)]
struct InitReport {
    #[serde(default)]
    ok: bool,
    error: Option<String>,
}

impl<C: Send + Sync + 'static> Engines<C> {
    /// The engine of `language`, loaded now unless it was. Blocking.
    pub fn engine<B: Backend<Code = C>>(
        &self,
        language: Language,
        backend: &B,
        max_memory_bytes: u64,
        deadline: Instant,
    ) -> Result<Arc<Engine<C>>, ServiceError> {
        let Some(path) = &self.paths[language as usize] else {
            let (option, built) = language.engine_option();
            return Err(ServiceError::Internal(format!(
                "this executor has no {} engine: its operator starts it with {option} PATH ({built})",
                language.name(),
            )));
        };
        self.loaded[language as usize]
            .get_or_init(|| {
                Engine::load(
                    backend,
                    language,
                    path,
                    self.states.as_ref(),
                    &self.trusted_keys,
                    max_memory_bytes,
                    deadline,
                )
                .map(Arc::new)
                .map_err(|e| {
                    ServiceError::Internal(format!(
                        "the {} engine {} does not load: {e:#}",
                        language.name(),
                        path.display()
                    ))
                })
            })
            .clone()
    }
}

/// `input` loaded (compiled, taken from the cache, or its artifact deserialized) and linked
/// without grants, its instances starting from `state` when given.
fn load_linked<B: Backend>(
    backend: &B,
    input: PrepareInput<'_>,
    max_memory_bytes: u64,
    state: Option<Arc<InstanceState>>,
) -> anyhow::Result<(Arc<B::Code>, B::Module)> {
    let code = Arc::new(backend.load(input)?);
    let module = backend.link(&code, &bare_spec(max_memory_bytes, state))?;
    Ok((code, module))
}

impl<C> Engine<C> {
    /// The engine at `path` loaded and its fresh instance's image read, with the snapshots
    /// kept under `states` (when given) for its actions. A backend that interprets portable
    /// modules runs it as the native code beside it when there is some that fits
    /// (`engine_artifact.rs`).
    pub fn load<B: Backend<Code = C>>(
        backend: &B,
        language: Language,
        path: &PathBuf,
        states: Option<&StateCache>,
        trusted_keys: &TrustedKeys,
        max_memory_bytes: u64,
        deadline: Instant,
    ) -> anyhow::Result<Engine<C>> {
        let started = Instant::now();
        let file = std::fs::read(path)?;
        let sha256 = wasm_artifact::sha256_hex(&file);
        let prepared = engine_module::prepare(&file)?;
        let base = Arc::new(InstanceState {
            // The module's own initial values and memory size.
            globals: Vec::new(),
            memory_pages: 0,
            image: MemoryImage::default().with_writes(
                prepared
                    .data
                    .iter()
                    .map(|(offset, bytes)| (*offset, bytes.as_slice())),
            )?,
        });
        let prepared_sha256 = wasm_artifact::sha256_hex(&prepared.wasm);
        let artifact = match B::PORTABLE_MODULES {
            PortableModules::Interpreted => engine_artifact::read_beside(path, B::RUNTIME),
            PortableModules::Compiled | PortableModules::Refused => None,
        };
        let native = artifact.as_deref().and_then(|bytes| {
            engine_artifact::verified(bytes, &prepared_sha256, B::RUNTIME, trusted_keys)
        });
        let input = match &native {
            Some(envelope) => PrepareInput::Precompiled(envelope),
            None => PrepareInput::Engine {
                wasm: &prepared.wasm,
                sha256: &prepared_sha256,
            },
        };
        let (code, module) =
            load_linked(backend, input, max_memory_bytes, Some(Arc::clone(&base)))?;
        let fresh = backend
            // Instantiation only: no guest code runs, so no CPU slot of the pool is taken.
            .capture(
                &module,
                &activation(String::new(), deadline),
                None,
                CpuSlot::detached(),
            )
            .map_err(|exit| anyhow::anyhow!("{}", init_failure(exit, "")))?;
        let states = states.and_then(|cache| {
            DiskCache::new(&cache.root, "snapshots", &sha256, cache.max_bytes)
                .inspect_err(
                    |e| tracing::warn!(error = %format!("{e:#}"), "snapshots are not kept on disk"),
                )
                .ok()
                .map(Arc::new)
        });
        tracing::info!(
            engine = %path.display(),
            %sha256,
            native_code = native.is_some(),
            memory_bytes = fresh.memory.len(),
            image_bytes = base.image.own_bytes(&MemoryImage::default()),
            took_ms = started.elapsed().as_millis() as u64,
            "engine loaded"
        );
        Ok(Engine {
            starts: exports_start(&file).then(StartedEngines::default),
            language,
            code,
            sha256,
            base,
            fresh,
            max_memory_bytes,
            states,
        })
    }

    /// A state file as this engine's action state, when it was taken on this very engine and
    /// fits its globals and memory: `file` parsed without its writes, which are `writes`. (Its
    /// language and `main` are the /init's to check.)
    pub fn restore_state<'a>(
        &self,
        file: StateFile,
        writes: impl IntoIterator<Item = (usize, &'a [u8])> + Clone,
    ) -> Result<PreInitialized, ServiceError> {
        let refused =
            |why: String| ServiceError::InitFailed(format!("Initialization has failed: {why}"));
        if file.engine_sha256 != self.sha256 {
            return Err(refused(format!(
                "the action was pre-initialised on another engine (sha256 {}) than this executor's {} engine ({}); \
                 pre-initialise it again with the executor's engine (wasm-precompile snapshot), or create it from its source",
                file.engine_sha256,
                self.language.name(),
                self.sha256
            )));
        }
        for (name, value) in &file.snapshot.globals {
            let known = self
                .fresh
                .globals
                .iter()
                .any(|(n, v)| n == name && v.same_type(value));
            if !known {
                return Err(refused(format!(
                    "the action's state sets the global `{name}`, which the {} engine does not have as a mutable global of that type",
                    self.language.name()
                )));
            }
        }
        let fresh_pages = self.fresh.memory.len().div_ceil(PAGE_BYTES) as u64;
        if file.snapshot.memory_pages < fresh_pages {
            return Err(refused(format!(
                "the action's state has {} pages of memory, fewer than the engine starts with ({fresh_pages})",
                file.snapshot.memory_pages
            )));
        }
        let snapshot = &file.snapshot;
        Ok(PreInitialized {
            state: Arc::new(self.state_from(&snapshot.globals, snapshot.memory_pages, writes)?),
            output: file
                .output
                .into_iter()
                .map(|line| {
                    let stream = if line.stderr {
                        Stream::Stderr
                    } else {
                        Stream::Stdout
                    };
                    CapturedLine::restored(stream, line.text)
                })
                .collect(),
        })
    }

    /// The state instances of an action start from: `snapshot` over this engine's image.
    fn state_of(&self, snapshot: &Snapshot) -> Result<InstanceState, ServiceError> {
        let writes = snapshot.writes.iter().map(|(at, bytes)| (*at, &bytes[..]));
        self.state_from(&snapshot.globals, snapshot.memory_pages, writes)
    }

    /// The state instances of an action start from: a snapshot's globals, memory size and
    /// writes over this engine's image.
    fn state_from<'a>(
        &self,
        globals: &[(String, GlobalValue)],
        memory_pages: u64,
        writes: impl IntoIterator<Item = (usize, &'a [u8])> + Clone,
    ) -> Result<InstanceState, ServiceError> {
        let image = self.base.image.with_writes(writes).map_err(|e| {
            ServiceError::Internal(format!("the action's memory image cannot be made: {e}"))
        })?;
        Ok(InstanceState {
            globals: globals.to_vec(),
            memory_pages,
            image,
        })
    }
}

/// Buffers state files were unpacked into, kept for the next ones (each /init that restores a
/// state file takes one, or makes one when none is left).
static UNPACKED: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// Most bytes of unpacking buffers kept at once, whatever the number of pool threads.
const KEPT_UNPACKED_BYTES: usize = 32 << 20;

/// Parses the state file `bytes` (its memory at most `max_memory_bytes`) with a kept unpacking
/// buffer and hands `restore` the file without its writes and the writes, borrowed from that
/// buffer, which is kept again afterwards while the kept ones stay within
/// [`KEPT_UNPACKED_BYTES`].
pub fn with_state_file<T, E: From<StateFileError>>(
    bytes: &[u8],
    max_memory_bytes: u64,
    restore: impl FnOnce(StateFile, &[(usize, &[u8])]) -> Result<T, E>,
) -> Result<T, E> {
    let kept = || UNPACKED.lock().unwrap_or_else(|p| p.into_inner());
    let mut unpacked = kept().pop().unwrap_or_default();
    let restored = StateFile::parse_into(bytes, max_memory_bytes, &mut unpacked)
        .map_err(E::from)
        .and_then(|(file, writes)| {
            let writes: Vec<(usize, &[u8])> = writes
                .into_iter()
                .map(|(offset, range)| (offset, &unpacked[range]))
                .collect();
            restore(file, &writes)
        });
    let mut buffers = kept();
    let held: usize = buffers.iter().map(Vec::capacity).sum();
    if held + unpacked.capacity() <= KEPT_UNPACKED_BYTES {
        buffers.push(unpacked);
    }
    restored
}

/// The file form of an action's state, taken on the `language` engine whose file has
/// `engine_sha256`.
pub fn state_file(
    language: Language,
    engine_sha256: &str,
    main: &str,
    made_by: &str,
    taken: &TakenState,
) -> StateFile {
    let (state, snapshot) = (&taken.state, &taken.snapshot);
    StateFile {
        language: language.name().into(),
        engine_sha256: engine_sha256.into(),
        main: main.into(),
        output: state
            .output
            .iter()
            .map(|line| PrintedLine {
                stderr: line.stream == Stream::Stderr,
                text: line.text.clone(),
            })
            .collect(),
        made_by: made_by.into(),
        snapshot: Snapshot {
            globals: snapshot.globals.clone(),
            memory_pages: snapshot.memory_pages,
            writes: snapshot.writes.clone(),
        },
    }
}

/// An action to pre-initialise: its init document, its entry function and its namespace.
pub struct ActionSource<'a> {
    pub document: &'a str,
    pub main: &'a str,
    pub namespace: &'a str,
}

/// An action's state for its init document on `engine`: read from the snapshots kept on disk
/// when an earlier /init (in this process or a former one) took it, else taken now and written
/// to disk in the background (not in the /init's time). Blocking; the action's errors are the
/// /init's.
pub fn pre_initialize_or_reuse<B: Backend>(
    backend: &B,
    engine: &Engine<B::Code>,
    action: ActionSource<'_>,
    memory_limit_bytes: u64,
    limit: Duration,
    cpu: CpuSlot,
) -> Result<PreInitialized, ServiceError> {
    let Some(states) = &engine.states else {
        return pre_initialize(backend, engine, &action, memory_limit_bytes, limit, cpu)
            .map(|taken| taken.state);
    };
    let key = wasm_artifact::sha256_hex(action.document.as_bytes());
    let kept = states.load(&key, |bytes| {
        with_state_file(bytes, engine.max_memory_bytes, |file, writes| {
            Ok::<_, anyhow::Error>(engine.restore_state(file, writes.iter().copied())?)
        })
    });
    if let Some(state) = kept {
        tracing::debug!(%key, "action state read from disk");
        return Ok(state);
    }
    let taken = pre_initialize(backend, engine, &action, memory_limit_bytes, limit, cpu)?;
    let (language, sha256) = (engine.language, engine.sha256.clone());
    let main = action.main.to_owned();
    let state = PreInitialized {
        state: Arc::clone(&taken.state.state),
        output: taken.state.output.clone(),
    };
    let states = Arc::clone(states);
    let stored = std::thread::Builder::new()
        .name("state-store".into())
        .spawn(move || {
            let made_by = concat!("wasm-executor ", env!("CARGO_PKG_VERSION"));
            let file = state_file(language, &sha256, &main, made_by, &taken);
            states.store_with(&key, || Ok(file.to_bytes()));
        });
    if let Err(error) = stored {
        tracing::warn!(%error, "the action's state is not kept on disk");
    }
    Ok(state)
}

/// Evaluates `action` from its init document in an instance of `engine` (started as the
/// action's namespace's engine was, when the engine can start without an action, else fresh)
/// and returns what it changed from a fresh instance. Blocking; the action's errors are the
/// /init's.
pub fn pre_initialize<B: Backend>(
    backend: &B,
    engine: &Engine<B::Code>,
    action: &ActionSource<'_>,
    memory_limit_bytes: u64,
    limit: Duration,
    cpu: CpuSlot,
) -> Result<TakenState, ServiceError> {
    let started = Instant::now();
    let deadline = started + limit;
    let (start, cpu) = started_engine(backend, engine, action.namespace, deadline, cpu);
    let start = start.filter(|s| s.memory_pages * PAGE_BYTES as u64 <= memory_limit_bytes);
    let from_started_engine = start.is_some();
    let spec = bare_spec(
        memory_limit_bytes,
        Some(start.unwrap_or_else(|| Arc::clone(&engine.base))),
    );
    let module = backend
        .link(&engine.code, &spec)
        .map_err(|e| ServiceError::Internal(e.to_string()))?;
    let (image, output) = initialize(backend, &module, action.document, deadline, cpu)?;
    let snapshot = Arc::new(Snapshot::between(&engine.fresh, &image));
    let state = Arc::new(engine.state_of(&snapshot)?);
    tracing::info!(
        memory_pages = snapshot.memory_pages,
        written_bytes = snapshot.written_bytes(),
        image_runs = state.image.runs(),
        globals = snapshot.globals.len(),
        from_started_engine,
        took_us = started.elapsed().as_micros() as u64,
        "action pre-initialised"
    );
    Ok(TakenState {
        state: PreInitialized { state, output },
        snapshot,
    })
}

/// `namespace`'s started engine, started now (on the job's CPU slot) unless kept, with the
/// slot for the pre-initialisation that follows; none when the engine cannot start without
/// an action, or did not start.
fn started_engine<B: Backend>(
    backend: &B,
    engine: &Engine<B::Code>,
    namespace: &str,
    deadline: Instant,
    cpu: CpuSlot,
) -> (Option<Arc<InstanceState>>, CpuSlot) {
    let Some(starts) = &engine.starts else {
        return (None, cpu);
    };
    let pool = cpu.pool();
    let mut slot = Some(cpu);
    let start = starts.get_or_start(namespace, || {
        let started = Instant::now();
        let module = backend.link(
            &engine.code,
            &bare_spec(engine.max_memory_bytes, Some(Arc::clone(&engine.base))),
        )?;
        let cpu = slot.take().unwrap_or_else(|| pool.take_until(deadline));
        let image = backend
            .capture(
                &module,
                &activation(String::new(), deadline),
                Some(START_EXPORT),
                cpu,
            )
            .map_err(|exit| anyhow::anyhow!("{}", init_failure(exit, "")))?;
        let start = Snapshot::between(&engine.fresh, &image);
        tracing::info!(
            engine = engine.language.name(),
            namespace,
            written_bytes = start.written_bytes(),
            took_us = started.elapsed().as_micros() as u64,
            "engine started for the namespace"
        );
        Ok(engine.state_of(&start)?)
    });
    let cpu = slot.unwrap_or_else(|| pool.take_until(deadline));
    match start {
        Ok(start) => (Some(start), cpu),
        Err(error) => {
            tracing::warn!(
                engine = engine.language.name(),
                error = %format!("{error:#}"),
                "the engine did not start alone; its action starts it"
            );
            (None, cpu)
        }
    }
}

/// An action's engine state after its code was loaded, as what instances start from, and what
/// the code printed meanwhile (its top-level `console.log`s and `print`s), which every container
/// of the action shows in the logs of its first activation, as OpenWhisk's runtimes do.
pub struct PreInitialized {
    pub state: Arc<InstanceState>,
    pub output: Vec<CapturedLine>,
}

/// An action's state taken here (not restored from its file), with what changed: what its state
/// file holds.
pub struct TakenState {
    pub state: PreInitialized,
    pub snapshot: Arc<Snapshot>,
}

/// Runs the engine's init export on `document` in a fresh instance of `module` and returns
/// the instance's state with what the code printed, or the engine's report of why the action
/// does not initialise.
fn initialize<B: Backend>(
    backend: &B,
    module: &B::Module,
    document: &str,
    deadline: Instant,
    cpu: CpuSlot,
) -> Result<(InstanceImage, Vec<CapturedLine>), ServiceError> {
    let activation = activation(document.to_owned(), deadline);
    let image = backend.capture(module, &activation, Some(INIT_EXPORT), cpu);
    let mut captured = activation.output.finish();
    let stderr: String = captured
        .lines
        .iter()
        .filter(|l| l.stream == crate::logs::Stream::Stderr)
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let image = image.map_err(|exit| ServiceError::InitFailed(init_failure(exit, &stderr)))?;
    let report = captured
        .result_line()
        .and_then(|line| serde_json::from_str::<InitReport>(line).ok());
    match report {
        Some(InitReport { ok: true, .. }) => {
            captured.drop_result_line();
            Ok((image, captured.lines))
        }
        Some(InitReport {
            error: Some(error), ..
        }) => Err(ServiceError::InitFailed(error)),
        _ => Err(ServiceError::InitFailed(
            "Initialization has failed: the engine reported nothing".into(),
        )),
    }
}

/// The state an instance of `wasm` (an engine whose mutable globals are exported) reaches
/// when it evaluates `document`: what `wasm-precompile snapshot` writes into the module.
pub fn initialized_image<B: Backend>(
    backend: &B,
    wasm: &[u8],
    document: &str,
    max_memory_bytes: u64,
    limit: Duration,
) -> anyhow::Result<InstanceImage> {
    let sha256 = wasm_artifact::sha256_hex(wasm);
    let input = PrepareInput::Portable {
        wasm,
        sha256: &sha256,
    };
    let (_, module) = load_linked(backend, input, max_memory_bytes, None)?;
    let (image, _) = initialize(
        backend,
        &module,
        document,
        Instant::now() + limit,
        CpuSlot::detached(),
    )?;
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_file_of(written: usize) -> Vec<u8> {
        StateFile {
            language: "Python".into(),
            engine_sha256: "0".repeat(64),
            main: "main".into(),
            output: Vec::new(),
            made_by: "test".into(),
            snapshot: Snapshot {
                globals: Vec::new(),
                memory_pages: (written / PAGE_BYTES + 1) as u64,
                writes: vec![(8, vec![7u8; written].into())],
            },
        }
        .to_bytes()
    }

    #[test]
    fn state_files_unpack_into_kept_buffers_within_their_bound() {
        // Several restores at once each take a buffer; what is kept afterwards stays bounded.
        std::thread::scope(|scope| {
            for round in 0..8 {
                scope.spawn(move || {
                    let written = (round + 1) << 20;
                    let file = state_file_of(written);
                    let got = with_state_file(&file, 1 << 30, |file, writes| {
                        assert_eq!(file.main, "main");
                        Ok::<_, StateFileError>(
                            writes
                                .iter()
                                .map(|(at, b)| (*at, b.len()))
                                .collect::<Vec<_>>(),
                        )
                    })
                    .unwrap();
                    assert_eq!(got, [(8, written)]);
                });
            }
        });
        let kept = UNPACKED.lock().unwrap();
        let held: usize = kept.iter().map(Vec::capacity).sum();
        assert!(
            !kept.is_empty() && held <= KEPT_UNPACKED_BYTES,
            "{held} bytes kept"
        );
        drop(kept);
        let damaged = with_state_file(b"\0OWSTAT1", 1 << 30, |_, _| Ok::<_, StateFileError>(()));
        assert!(damaged.is_err());
    }

    #[test]
    fn kinds_name_their_language_or_are_refused_by_name() {
        assert_eq!(Language::of_kind(None), Ok(None));
        assert_eq!(Language::of_kind(Some("wasm:0.1")), Ok(None));
        for kind in ["python:3", "python:3.11", "Python3", "python:default"] {
            assert_eq!(
                Language::of_kind(Some(kind)),
                Ok(Some(Language::Python)),
                "{kind}"
            );
        }
        for kind in [
            "nodejs:20",
            "nodejs",
            "NodeJS:default",
            "javascript",
            "js:quickjs",
        ] {
            assert_eq!(
                Language::of_kind(Some(kind)),
                Ok(Some(Language::JavaScript)),
                "{kind}"
            );
        }
        let refused = Language::of_kind(Some("java:8")).unwrap_err();
        assert!(refused.contains("java:8"), "{refused}");
    }

    #[test]
    fn the_init_document_carries_main_env_and_sources() {
        let mut env = BTreeMap::from([("__OW_API_HOST".to_string(), "h".to_string())]);
        let doc = init_document(
            Language::JavaScript,
            "run",
            &env,
            Sources::Text("function run(){}".into()),
        );
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(parsed["main"], "run");
        assert_eq!(parsed["env"]["__OW_API_HOST"], "h");
        // What OpenWhisk sets per activation leaves the document, and with it the key, alike.
        for name in PER_ACTIVATION_ENV {
            env.insert(name.to_string(), "first activation's".to_string());
        }
        let same = init_document(
            Language::JavaScript,
            "run",
            &env,
            Sources::Text("function run(){}".into()),
        );
        assert_eq!(same, doc);
        assert_eq!(parsed["code"], "function run(){}");
        let files = BTreeMap::from([("index.js".to_string(), "x".to_string())]);
        let doc = init_document(Language::Python, "main", &env, Sources::Files(files));
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(parsed["files"]["index.js"], "x");
        assert_eq!(parsed["language"], "Python");
    }
}

//! Actions in a language the executor runs on an engine that is itself a Wasm module
//! (JavaScript on QuickJS-NG, `actions/quickjs`): which kinds they are, the engine loaded once
//! per executor, and each action's pre-initialisation into a snapshot.
//!
//! The engine is instrumented once with wizer (every global exported) and compiled like any
//! module. An action's /init evaluates its code in a fresh engine instance (the export
//! `wizer-initialize`, the init document on stdin) and keeps what that instance changed, as a
//! [`Snapshot`]; its containers share the engine's compiled code and that snapshot, and every
//! activation starts from it.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use futures_util::FutureExt;
use serde::Deserialize;
use wasm_executor_decode::sources::Sources;
use wasmtime_wizer::ModuleContext;

use crate::{
    backend::{
        Activation, Backend, GuestExit, ModuleSpec, PrepareInput,
        snapshot::{GlobalValue, InstanceImage, Snapshot},
    },
    capability::Grants,
    error::ServiceError,
    logs::OutputCapture,
    pool::CpuSlot,
};

/// The export that evaluates an action's code into the engine's state.
pub const INIT_EXPORT: &str = "wizer-initialize";
/// Output kept from a pre-initialisation (its last stdout line says how it went).
const INIT_OUTPUT_BYTES: usize = 1 << 20;

/// A language of actions that run on an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    JavaScript,
}

impl Language {
    /// The language of an OpenWhisk kind: `nodejs` (any version), `javascript` or `js` is
    /// JavaScript; no kind, `wasm:*` or `blackbox` is a WebAssembly module (`None`); any other
    /// kind is refused by name.
    pub fn of_kind(kind: Option<&str>) -> Result<Option<Language>, String> {
        let Some(kind) = kind.map(str::trim).filter(|k| !k.is_empty()) else {
            return Ok(None);
        };
        let family = kind.split(':').next().unwrap_or(kind).to_ascii_lowercase();
        match family.as_str() {
            "wasm" | "blackbox" => Ok(None),
            "nodejs" | "javascript" | "js" => Ok(Some(Language::JavaScript)),
            _ => Err(format!(
                "this executor runs actions of kind wasm:* (WebAssembly modules) and nodejs:* (JavaScript), not {kind}"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::JavaScript => "JavaScript",
        }
    }

    /// The executor's option naming the engine.
    fn engine_option(self) -> &'static str {
        match self {
            Language::JavaScript => "--js-engine",
        }
    }
}

/// What pre-initialisation gives the engine on stdin: the entry function's name, the
/// action's environment at /init, and its sources.
pub fn init_document(main: &str, env: &BTreeMap<String, String>, sources: Sources) -> String {
    let mut document = serde_json::json!({ "main": main, "env": env });
    match sources {
        Sources::Text(code) => document["code"] = code.into(),
        Sources::Files(files) => document["files"] = serde_json::json!(files),
    }
    document.to_string()
}

/// A language's engine in this executor: loaded (compiled, or taken from the cache) once,
/// with the image of a fresh instance that snapshots are taken against.
pub struct Engine<C> {
    pub code: Arc<C>,
    fresh: InstanceImage,
}

/// The engines this executor was given, each loaded at its first use.
pub struct Engines<C> {
    javascript: Option<PathBuf>,
    loaded: OnceLock<Result<Arc<Engine<C>>, ServiceError>>,
}

impl<C> Engines<C> {
    pub fn new(javascript: Option<PathBuf>) -> Self {
        Engines {
            javascript,
            loaded: OnceLock::new(),
        }
    }
}

/// How an engine's instance is linked: no grants (pre-initialisation reads nothing but its
/// stdin), the memory limit given.
fn bare_spec(memory_limit_bytes: u64) -> ModuleSpec {
    ModuleSpec {
        entry: None,
        grants: Grants::default(),
        memory_limit_bytes,
        snapshot: None,
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
        let Language::JavaScript = language;
        let Some(path) = &self.javascript else {
            return Err(ServiceError::Internal(format!(
                "this executor has no {} engine: its operator starts it with {} PATH (actions/dist/quickjs.wasm)",
                language.name(),
                language.engine_option()
            )));
        };
        self.loaded
            .get_or_init(|| {
                load_engine(backend, path, max_memory_bytes, deadline)
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

/// The engine instrumented by wizer (every mutable global exported), loaded and linked
/// without grants; wizer's view of the module, for a rewrite, comes with it.
fn load_instrumented<'a, B: Backend>(
    backend: &B,
    engine_wasm: &'a [u8],
    max_memory_bytes: u64,
) -> anyhow::Result<(ModuleContext<'a>, Arc<B::Code>, B::Module)> {
    let (context, instrumented) = wasmtime_wizer::Wizer::new()
        .instrument(engine_wasm)
        .map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let sha256 = wasm_artifact::sha256_hex(&instrumented);
    let code = Arc::new(backend.load(PrepareInput::Portable {
        wasm: &instrumented,
        sha256: &sha256,
    })?);
    let module = backend.link(&code, &bare_spec(max_memory_bytes))?;
    Ok((context, code, module))
}

fn load_engine<B: Backend>(
    backend: &B,
    path: &PathBuf,
    max_memory_bytes: u64,
    deadline: Instant,
) -> anyhow::Result<Engine<B::Code>> {
    let started = Instant::now();
    let wasm = std::fs::read(path)?;
    let (_, code, module) = load_instrumented(backend, &wasm, max_memory_bytes)?;
    let fresh = backend
        // Instantiation only: no guest code runs, so no CPU slot of the pool is taken.
        .capture(
            &module,
            &activation(String::new(), deadline),
            None,
            CpuSlot::detached(),
        )
        .map_err(|exit| anyhow::anyhow!("{}", init_failure(exit, "")))?;
    tracing::info!(
        engine = %path.display(),
        memory_bytes = fresh.memory.len(),
        took_ms = started.elapsed().as_millis() as u64,
        "engine loaded"
    );
    Ok(Engine { code, fresh })
}

/// Evaluates an action's init document in a fresh instance of `engine` and returns what it
/// changed. Blocking; the action's errors are the /init's.
pub fn pre_initialize<B: Backend>(
    backend: &B,
    engine: &Engine<B::Code>,
    document: &str,
    memory_limit_bytes: u64,
    limit: Duration,
    cpu: CpuSlot,
) -> Result<Snapshot, ServiceError> {
    let started = Instant::now();
    let module = backend
        .link(&engine.code, &bare_spec(memory_limit_bytes))
        .map_err(|e| ServiceError::Internal(e.to_string()))?;
    let image = initialize(backend, &module, document, started + limit, cpu)?;
    let snapshot = Snapshot::between(&engine.fresh, &image);
    tracing::info!(
        memory_pages = snapshot.memory_pages,
        written_bytes = snapshot.written_bytes(),
        globals = snapshot.globals.len(),
        took_us = started.elapsed().as_micros() as u64,
        "action pre-initialised"
    );
    Ok(snapshot)
}

/// Runs the engine's init export on `document` in a fresh instance of `module` and returns
/// the instance's state, or the engine's report of why the action does not initialise.
fn initialize<B: Backend>(
    backend: &B,
    module: &B::Module,
    document: &str,
    deadline: Instant,
    cpu: CpuSlot,
) -> Result<InstanceImage, ServiceError> {
    let activation = activation(document.to_owned(), deadline);
    let image = backend.capture(module, &activation, Some(INIT_EXPORT), cpu);
    let captured = activation.output.finish();
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
        Some(InitReport { ok: true, .. }) => Ok(image),
        Some(InitReport {
            error: Some(error), ..
        }) => Err(ServiceError::InitFailed(error)),
        _ => Err(ServiceError::InitFailed(
            "Initialization has failed: the engine reported nothing".into(),
        )),
    }
}

/// The action as one module: the engine with the state `document` leaves it in written into
/// its data (wizer's rewrite), portable Wasm that runs the action on any executor, with no
/// engine there; `wasm-precompile snapshot` writes it for `wasm-precompile compile`.
pub fn snapshot_module<B: Backend>(
    backend: &B,
    engine_wasm: &[u8],
    document: &str,
    max_memory_bytes: u64,
    limit: Duration,
) -> anyhow::Result<Vec<u8>> {
    let (context, _, module) = load_instrumented(backend, engine_wasm, max_memory_bytes)?;
    let image = initialize(
        backend,
        &module,
        document,
        Instant::now() + limit,
        CpuSlot::detached(),
    )?;
    // The state is in memory already: every future below is ready at its first poll.
    wasmtime_wizer::Wizer::new()
        .snapshot(&context, &mut ImageState(&image))
        .now_or_never()
        .ok_or_else(|| anyhow::anyhow!("the snapshot did not complete at once"))?
        .map_err(|e| anyhow::anyhow!("{e:#}"))
}

/// An instance's captured state as wizer reads it: the exported mutable globals (wizer's
/// `__wizer_global_N` among them) and the one memory.
struct ImageState<'a>(&'a InstanceImage);

impl wasmtime_wizer::InstanceState for ImageState<'_> {
    fn global_get(
        &mut self,
        name: &str,
        _type: wasmtime_wizer::ValType,
    ) -> impl Future<Output = wasmtime_wizer::SnapshotVal> + Send {
        use wasmtime_wizer::SnapshotVal;
        let value = self
            .0
            .globals
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v);
        // Every exported mutable global was read; a global that was not would keep zero.
        std::future::ready(match value {
            Some(GlobalValue::I32(v)) => SnapshotVal::I32(v),
            Some(GlobalValue::I64(v)) => SnapshotVal::I64(v),
            Some(GlobalValue::F32(bits)) => SnapshotVal::F32(bits),
            Some(GlobalValue::F64(bits)) => SnapshotVal::F64(bits),
            None => SnapshotVal::I32(0),
        })
    }

    fn memory_contents(
        &mut self,
        _name: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) -> impl Future<Output = ()> + Send {
        contents(&self.0.memory);
        std::future::ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_their_language_or_are_refused_by_name() {
        assert_eq!(Language::of_kind(None), Ok(None));
        assert_eq!(Language::of_kind(Some("wasm:0.1")), Ok(None));
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
        let env = BTreeMap::from([("__OW_API_HOST".to_string(), "h".to_string())]);
        let doc = init_document("run", &env, Sources::Text("function run(){}".into()));
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(parsed["main"], "run");
        assert_eq!(parsed["env"]["__OW_API_HOST"], "h");
        assert_eq!(parsed["code"], "function run(){}");
        let files = BTreeMap::from([("index.js".to_string(), "x".to_string())]);
        let doc = init_document("main", &env, Sources::Files(files));
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(parsed["files"]["index.js"], "x");
    }
}

//! `wasm-precompile-snapshot`, run as `wasm-precompile snapshot`: a JavaScript or Python action
//! pre-initialised ahead of time. The executor's engine for its language evaluates the action's
//! code exactly as an executor does at /init (on wasmtime), and what it reaches is written as
//! the action's state file, zipped for `wsk action create`: a few hundred KiB that every
//! executor started with the same engine runs on any backend and CPU, without compiling and
//! without running the code's top level. With `--module`, wizer writes the state into the
//! engine's data instead: one portable module that needs no engine on the executor, which
//! `wasm-precompile compile` turns into a signed artifact for any runtime and target.

use std::{
    collections::BTreeMap,
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use clap::Parser;
use futures_util::FutureExt;
use wasm_executor::{
    backend::{
        Backend, BackendSettings,
        snapshot::{GlobalValue, InstanceImage},
    },
    host_io,
    language::{self, Engine, Language},
    pool::CpuSlot,
};
use wasm_executor_decode::sources::{self, ActionCode, Sources};
use wasm_executor_wasmtime::WasmtimeBackend;
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

/// Most source an action may bring (as the executor's default --max-module-mb).
const MAX_SOURCE_BYTES: usize = 32 << 20;
/// The engine's memory while the code's top level runs, and the time it may take.
const MAX_MEMORY_BYTES: u64 = 2 << 30;
const INIT_LIMIT: Duration = Duration::from_secs(120);

/// Pre-initialise a JavaScript or Python action: its state file for executors with the same
/// engine, or one portable module.
#[derive(Debug, Parser)]
#[command(name = "wasm-precompile snapshot", version)]
#[command(group(clap::ArgGroup::new("engine").required(true).args(["js_engine", "python_engine"])))]
struct Args {
    /// The action: a .js file or a .zip of an npm package (package.json's `main` or index.js
    /// at its top, dependencies bundled in node_modules), with --js-engine; a .py file or a
    /// .zip with __main__.py at its top (packages beside it or in virtualenv/), with
    /// --python-engine.
    input: PathBuf,

    /// The JavaScript engine, as given to the executor (actions/dist/quickjs.wasm).
    #[arg(long)]
    js_engine: Option<PathBuf>,

    /// The Python engine, as given to the executor (actions/dist/python.wasm).
    #[arg(long)]
    python_engine: Option<PathBuf>,

    /// The function the action exports or defines (`wsk action create --main`).
    #[arg(long, default_value = "main")]
    main: String,

    /// An environment variable for the code's top level, NAME=VALUE; repeatable. Activations
    /// see the executor's own environment, not these.
    #[arg(long = "env", value_parser = parse_env)]
    env: Vec<(String, String)>,

    /// Write the engine with the action's state as one portable module (for executors without
    /// the engine; compile it with `wasm-precompile compile`) instead of the state file.
    #[arg(long)]
    module: bool,

    /// Where to write it (default: the input's name with .snapshot.zip, or with .wasm for
    /// --module). A state file is zipped when the name ends in .zip, else written bare.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Keep the engine's compiled code in this directory (created private to the user, as
    /// the executor's --cache-dir), so that the next action pre-initialised with the same
    /// engine skips compiling it. Default: a directory of this run's own, removed at the end.
    #[arg(long)]
    cache_dir: Option<PathBuf>,
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))?;
    Ok((name.to_owned(), value.to_owned()))
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let input =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let sources = if input.starts_with(b"PK") {
        match sources::of_zip(input.into(), MAX_SOURCE_BYTES)? {
            ActionCode::Source(sources) => sources,
            ActionCode::State(_) => bail!(
                "{} is already a pre-initialised action",
                args.input.display()
            ),
        }
    } else {
        if input.starts_with(b"\0asm") {
            bail!(
                "{} is already a WebAssembly module: compile it with `wasm-precompile compile`",
                args.input.display()
            );
        }
        Sources::Text(String::from_utf8(input).with_context(|| {
            format!("{} is neither a zip nor UTF-8 source", args.input.display())
        })?)
    };
    let (language, engine_path) = match (args.js_engine, args.python_engine) {
        (Some(path), _) => (Language::JavaScript, path),
        (None, Some(path)) => (Language::Python, path),
        (None, None) => unreachable!("clap requires one engine"),
    };
    let env: BTreeMap<String, String> = args.env.into_iter().collect();
    let document = language::init_document(language, &args.main, &env, sources);
    // The engine's compiled code, kept in --cache-dir, or else needed once here: in a private
    // cache of this run's own, removed at the end.
    let (cache_dir, own_cache) = match &args.cache_dir {
        Some(dir) => (dir.clone(), false),
        None => {
            let pid = std::process::id();
            (
                std::env::temp_dir().join(format!("wasm-precompile-snapshot-{pid}")),
                true,
            )
        }
    };
    let cache_dir = wasm_executor::state::private_dir(&cache_dir)?;
    let made = BackendSettings {
        cache_dir: cache_dir.clone(),
        max_cache_bytes: 1 << 30,
        max_instances: 2,
        min_instances: 1,
        max_memory_bytes: MAX_MEMORY_BYTES,
        keep_resident_bytes: 0,
        host_io: host_io::start()?,
    };
    let made = WasmtimeBackend::new(&made).and_then(|backend| {
        if args.module {
            module_of(&backend, language, &engine_path, &document)
        } else {
            state_of(&backend, language, &engine_path, &document, &args.main)
        }
    });
    if own_cache {
        let _ = std::fs::remove_dir_all(&cache_dir);
    }
    let (bytes, what) = made?;
    let output = args.output.unwrap_or_else(|| {
        let stem = args.input.file_stem().unwrap_or_default().to_string_lossy();
        let name = if args.module {
            format!("{stem}.wasm")
        } else {
            format!("{stem}.snapshot.zip")
        };
        args.input.with_file_name(name)
    });
    let written = if output.extension().is_some_and(|e| e == "zip") {
        zipped(&output, &bytes)?
    } else {
        bytes
    };
    std::fs::write(&output, &written).with_context(|| format!("writing {}", output.display()))?;
    let next = if args.module {
        format!(
            "wasm-precompile compile --runtime RUNTIME -- {} --sign-key KEY --zip",
            output.display()
        )
    } else {
        format!(
            "wsk action create NAME {} --kind {}",
            output.display(),
            match language {
                Language::JavaScript => "nodejs:20",
                Language::Python => "python:3",
            }
        )
    };
    println!(
        "{}: {} bytes, {what} with action {} (main {}) evaluated; next: {next}",
        output.display(),
        written.len(),
        args.input.display(),
        args.main,
    );
    Ok(())
}

/// The action's state file: `document` pre-initialised on the engine at `engine_path` exactly
/// as an executor's /init does it.
fn state_of(
    backend: &WasmtimeBackend,
    language: Language,
    engine_path: &Path,
    document: &str,
    main: &str,
) -> anyhow::Result<(Vec<u8>, &'static str)> {
    let deadline = Instant::now() + INIT_LIMIT;
    let engine = Engine::load(
        backend,
        language,
        &engine_path.to_path_buf(),
        None,
        // wasmtime compiles the engine: no native code of it is looked for, nor keys needed.
        &Default::default(),
        MAX_MEMORY_BYTES,
        deadline,
    )
    .with_context(|| {
        format!(
            "loading the {} engine {}",
            language.name(),
            engine_path.display()
        )
    })?;
    // Any namespace: the state file holds what the start drew as well.
    let action = language::ActionSource {
        document,
        main,
        namespace: "",
    };
    let taken = language::pre_initialize(
        backend,
        &engine,
        &action,
        MAX_MEMORY_BYTES,
        INIT_LIMIT,
        CpuSlot::detached(),
    )?;
    let made_by = concat!("wasm-precompile ", env!("CARGO_PKG_VERSION"));
    let file = language::state_file(language, &engine.sha256, main, made_by, &taken)
        .to_bytes_packed_by(packed_small)
        .context("packing the state")?;
    Ok((file, "the state of the engine"))
}

/// LZ4 at its highest compression: the file every /init of the action carries is packed once,
/// here, so the time to pack smaller is spent once, not at every cold start.
fn packed_small(unpacked: &[u8]) -> std::io::Result<Vec<u8>> {
    lz4::block::compress(
        unpacked,
        Some(lz4::block::CompressionMode::HIGHCOMPRESSION(12)),
        false,
    )
}

/// The engine with the action's state written into it, as one portable module.
fn module_of(
    backend: &WasmtimeBackend,
    language: Language,
    engine_path: &Path,
    document: &str,
) -> anyhow::Result<(Vec<u8>, &'static str)> {
    let engine = std::fs::read(engine_path).with_context(|| {
        format!(
            "reading the {} engine {}",
            language.name(),
            engine_path.display()
        )
    })?;
    Ok((snapshot_module(backend, &engine, document)?, "the engine"))
}

/// `bytes` as the one file of a zip, named after the zip.
fn zipped(zip_path: &Path, bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    let stem = zip_path.file_stem().unwrap_or_default().to_string_lossy();
    let name = stem.strip_suffix(".snapshot").unwrap_or(&stem);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    // Stored as it is: the state file packs its memory already, faster to unpack than deflate.
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file(format!("{name}.snapshot"), stored)?;
    zip.write_all(bytes)?;
    Ok(zip.finish()?.into_inner())
}

/// The engine with the state `document` leaves it in written into its data and globals
/// (wizer's rewrite of the module wizer instrumented, run by the executor's own backend).
fn snapshot_module(
    backend: &WasmtimeBackend,
    engine: &[u8],
    document: &str,
) -> anyhow::Result<Vec<u8>> {
    let wizer = Wizer::new();
    let (context, instrumented) = wizer
        .instrument(engine)
        .map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let image = language::initialized_image(
        backend,
        &instrumented,
        document,
        MAX_MEMORY_BYTES,
        INIT_LIMIT,
    )?;
    // The state is in memory already: every future below is ready at its first poll.
    wizer
        .snapshot(&context, &mut ImageState(&image))
        .now_or_never()
        .ok_or_else(|| anyhow::anyhow!("the snapshot did not complete at once"))?
        .map_err(|e| anyhow::anyhow!("{e:#}"))
}

/// An instance's captured state as wizer reads it: its exported mutable globals (wizer's
/// `__wizer_global_N` among them) and its one memory.
struct ImageState<'a>(&'a InstanceImage);

impl InstanceState for ImageState<'_> {
    fn global_get(
        &mut self,
        name: &str,
        _type: ValType,
    ) -> impl Future<Output = SnapshotVal> + Send {
        let value = self
            .0
            .globals
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v);
        // The backend read every exported mutable global; one it could not read keeps zero.
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

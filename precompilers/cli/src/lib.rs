//! The shared driver of every runtime's precompiler binary: arguments, the envelope, signing,
//! zipping for `wsk action create`, and the report of what was produced. A runtime binary only
//! supplies [`Compiler::compile`] and the flags of its own ([`Compiler::Options`]).

pub mod cpu;

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, bail};
use clap::{CommandFactory, FromArgMatches, Parser};
use wasm_artifact::{
    Envelope, OperatorKey, RuntimeId, artifact_file_name, host_target, package, target_arch,
};

pub use cpu::{CpuLevel, TargetCpu};

/// Compiles portable Wasm to one runtime's native code.
pub trait Compiler {
    const RUNTIME: RuntimeId;

    /// Flags only this runtime's compiler takes, next to the shared ones ([`NoOptions`] if none).
    type Options: clap::Args + std::fmt::Debug;

    /// Targets this compiler can produce code for.
    fn supported_targets(&self) -> Vec<String> {
        let mut targets = vec![host_target(), "aarch64-unknown-linux-gnu".into()];
        targets.dedup();
        targets
    }

    /// The module to compile out of the input file's (by default the input itself).
    fn module_to_compile(
        &self,
        wasm: Vec<u8>,
        _options: &Self::Options,
    ) -> anyhow::Result<Vec<u8>> {
        Ok(wasm)
    }

    /// Native code for `target` and `cpu` (the driver checked that a level is one of the
    /// target's architecture, and that `ThisMachine` is only asked for the host).
    fn compile(
        &self,
        wasm: &[u8],
        target: &str,
        cpu: TargetCpu,
        options: &Self::Options,
    ) -> anyhow::Result<Vec<u8>>;
}

/// The options of a compiler that has no flags of its own.
#[derive(Debug, clap::Args)]
pub struct NoOptions {}

/// Precompile a WebAssembly module ahead of time for the executor.
#[derive(Debug, Parser)]
#[command(version)]
pub struct Args<O: clap::Args> {
    /// The portable module (.wasm) to compile.
    pub input: PathBuf,

    /// Where to write the artifact (default: next to the input, named by runtime and target).
    #[arg(short, long)]
    pub output: Option<PathBuf>,

    /// Target triple of the machine that will run the artifact.
    #[arg(long, default_value_t = host_target())]
    pub target: String,

    /// Use every CPU feature of this machine instead of the target's portable baseline; machines
    /// without them refuse the artifact at /init.
    #[arg(long, conflicts_with = "cpu")]
    pub native_cpu: bool,

    #[arg(long, value_name = "LEVEL", long_help = cpu::levels_help())]
    /// Compile for a named CPU level (x86-64-v3, cortex-a76, …) instead of the portable baseline.
    pub cpu: Option<String>,

    /// The operator's private key (PEM) to sign the artifact with.
    #[arg(long)]
    pub sign_key: Option<PathBuf>,

    /// Write a zip holding the artifact, ready for `wsk action create NAME x.zip --kind wasm:0.1`.
    #[arg(long)]
    pub zip: bool,

    /// The runtime's own flags.
    #[command(flatten)]
    pub runtime: O,
}

/// Parses the command line, compiles, and reports; the `main` of every runtime binary.
pub fn run_main<C: Compiler>(compiler: C) -> ExitCode {
    // Named after the runtime's binary, for --version and the usage line (clap keeps the name
    // for the process's life).
    let name: &'static str = format!("wasm-precompile-{}", C::RUNTIME).leak();
    let command = Args::<C::Options>::command().name(name);
    let args = match Args::<C::Options>::from_arg_matches(&command.get_matches()) {
        Ok(args) => args,
        Err(error) => error.exit(),
    };
    match run(&compiler, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run<C: Compiler>(compiler: &C, args: Args<C::Options>) -> anyhow::Result<()> {
    if !compiler.supported_targets().contains(&args.target) {
        bail!(
            "{} cannot compile for {}; supported targets: {}",
            C::RUNTIME,
            args.target,
            compiler.supported_targets().join(", ")
        );
    }
    let cpu = match (&args.cpu, args.native_cpu) {
        (Some(level), _) => TargetCpu::Level(CpuLevel::for_target(level, &args.target)?),
        (None, true) if args.target != host_target() => bail!(
            "--native-cpu only applies when compiling for this machine ({})",
            host_target()
        ),
        (None, true) => TargetCpu::ThisMachine,
        (None, false) => TargetCpu::Portable,
    };
    let wasm =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    if !wasm.starts_with(b"\0asm") {
        bail!(
            "{} is not a WebAssembly binary module",
            args.input.display()
        );
    }
    let input_bytes = wasm.len();
    let wasm = compiler.module_to_compile(wasm, &args.runtime)?;
    let payload = compiler
        .compile(&wasm, &args.target, cpu, &args.runtime)
        .with_context(|| format!("compiling {} with {}", args.input.display(), C::RUNTIME))?;
    let mut envelope = Envelope::new(C::RUNTIME, &args.target, &wasm, payload);
    if let Some(path) = &args.sign_key {
        envelope.sign(&OperatorKey::load(path)?);
    }
    let stem = args
        .input
        .file_stem()
        .map_or_else(|| "action".into(), |s| s.to_string_lossy().into_owned());
    let arch = target_arch(&args.target);
    let artifact_name = artifact_file_name(&stem, C::RUNTIME, &args.target);
    let bytes = envelope.to_bytes();
    let (bytes, default_name) = if args.zip {
        (
            package::zip_single(&artifact_name, &bytes)?,
            format!("{stem}.{}-{arch}.zip", C::RUNTIME),
        )
    } else {
        (bytes, artifact_name)
    };
    let output = args
        .output
        .unwrap_or_else(|| args.input.with_file_name(default_name));
    std::fs::write(&output, &bytes).with_context(|| format!("writing {}", output.display()))?;
    println!(
        "{}: {} {} artifact for {}{}, {} bytes ({}), from {} ({} bytes)",
        output.display(),
        envelope.header.runtime,
        envelope.header.runtime_version,
        envelope.header.target,
        match cpu {
            TargetCpu::Portable => String::new(),
            TargetCpu::ThisMachine => " (this CPU's features)".into(),
            TargetCpu::Level(level) => format!(" (CPU level {})", level.name),
        },
        bytes.len(),
        if envelope.is_signed() {
            "signed"
        } else {
            "unsigned"
        },
        args.input.display(),
        input_bytes
    );
    Ok(())
}

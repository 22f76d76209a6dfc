//! `wasm-precompile`: the front end. It creates operator keys, and precompiles by handing the
//! arguments to the runtime's own compiler binary (`wasm-precompile-<runtime>` next to it):
//! each runtime links its own compiler (and LLVM), which cannot share one process.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use wasm_artifact::{OperatorKey, RuntimeId};

#[derive(Debug, Parser)]
#[command(
    name = "wasm-precompile",
    version,
    about = "Precompile WebAssembly actions for the executor"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create an operator key pair: NAME.pem (private, for signing) and NAME.pub (for the executor).
    Keygen {
        /// Path prefix of the two files.
        #[arg(long, default_value = "operator")]
        out: PathBuf,
    },
    /// Compile with a runtime's compiler; run `wasm-precompile compile --runtime R -- --help` for its flags.
    Compile {
        /// wasmtime, wasmer or wamr.
        #[arg(long, default_value = "wasmtime")]
        runtime: String,
        /// Arguments for the runtime's compiler: INPUT.wasm [--target T] [--sign-key K] [--zip] [-o OUT].
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Pre-initialise a JavaScript or Python action (.js or .py, or a zip) ahead of time: its
    /// state file for executors with the same engine, or with --module one portable module for
    /// `compile`; run `wasm-precompile snapshot -- --help` for its flags.
    Snapshot {
        /// INPUT.js|INPUT.py|INPUT.zip --js-engine quickjs.wasm | --python-engine python.wasm
        /// [--main NAME] [--env NAME=VALUE] [--module] [-o OUT].
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Keygen { out } => {
            let key = OperatorKey::generate();
            let private = out.with_extension("pem");
            let public = out.with_extension("pub");
            write_private(&private, &key.private_pem())?;
            std::fs::write(&public, key.public_pem())
                .with_context(|| format!("writing {}", public.display()))?;
            println!(
                "private key {} (sign with --sign-key), public key {} (give to the executor's --trusted-key)",
                private.display(),
                public.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Compile { runtime, args } => {
            let Some(runtime) = RuntimeId::from_name(&runtime) else {
                bail!("unknown runtime {runtime:?}: use wasmtime, wasmer or wamr");
            };
            delegate(
                &runtime.to_string(),
                &format!("precompiler-{runtime}"),
                &args,
            )
        }
        Command::Snapshot { args } => delegate("snapshot", "precompiler-wasmtime", &args),
    }
}

/// Runs `wasm-precompile-<tool>` next to this binary with `args` (`make <target>` builds it).
fn delegate(tool: &str, target: &str, args: &[String]) -> anyhow::Result<ExitCode> {
    let binary = std::env::current_exe()
        .context("locating wasm-precompile")?
        .with_file_name(format!("wasm-precompile-{tool}"));
    if !binary.exists() {
        bail!(
            "{} is not installed next to wasm-precompile: in a checkout, build it with `make {target}`; \
             a release's aarch64 archive holds wasmtime's compiler only (precompile for wasmer and WAMR \
             on x86_64 with --target aarch64-unknown-linux-gnu)",
            binary.display()
        );
    }
    let status = std::process::Command::new(&binary)
        .args(args)
        .status()
        .with_context(|| format!("running {}", binary.display()))?;
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

fn write_private(path: &std::path::Path, pem: &str) -> anyhow::Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    file.write_all(pem.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

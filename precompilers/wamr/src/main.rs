//! `wasm-precompile-wamr`: compiles a .wasm with WAMR's AOT compiler into an `.aot` module for
//! the host, aarch64 or armv7, tags it with the WAMR profile (`wamr-profile`) and wraps it in our
//! signed envelope. WAMR's compiler library and LLVM live only in this binary: they export the
//! same symbols as the executor's WAMR runtime, built with other settings.

mod aot;
mod target;

use std::process::ExitCode;

use anyhow::{Context, bail};
use wasm_artifact::{RuntimeId, host_target};
use wasm_precompile::{Compiler, TargetCpu};

struct Wamr;

/// The flags only WAMR's compiler takes.
#[derive(Debug, clap::Args)]
struct WamrOptions {
    /// Emit code that executes in place, as `wamrc --xip` does: the executor maps the file's
    /// code read-only and executable instead of WAMR copying it into memory of its own, so a
    /// distinct action holds its code once. Calls between functions then go through a table
    /// and LLVM's intrinsics through WAMR's helpers; measure before using it for code dominated
    /// by either (docs/backends.md, "Code that executes in place").
    #[arg(long)]
    xip: bool,

    /// The input is a language engine (`actions/dist/quickjs.wasm`, `python.wasm`): compile it
    /// as the executor runs engines (its mutable globals exported, its data lifted out into the
    /// memory image), into the artifact the WAMR executor looks for beside the engine — by
    /// default the name this writes, e.g. `quickjs.wamr-x86_64.owart` — to run the engine as
    /// AOT code instead of interpreting it.
    #[arg(long, conflicts_with = "zip")]
    engine: bool,
}

impl Compiler for Wamr {
    const RUNTIME: RuntimeId = RuntimeId::Wamr;
    type Options = WamrOptions;

    /// The shared targets, and 32-bit Raspberry Pi OS (ARMv7, hard float).
    fn supported_targets(&self) -> Vec<String> {
        vec![
            host_target(),
            "aarch64-unknown-linux-gnu".into(),
            "armv7-unknown-linux-gnueabihf".into(),
        ]
    }

    fn module_to_compile(&self, wasm: Vec<u8>, options: &WamrOptions) -> anyhow::Result<Vec<u8>> {
        if !options.engine {
            return Ok(wasm);
        }
        Ok(wasm_executor_engine_module::prepare(&wasm)
            .context("the input is not an engine the executor can run")?
            .wasm)
    }

    fn compile(
        &self,
        wasm: &[u8],
        target: &str,
        cpu: TargetCpu,
        options: &WamrOptions,
    ) -> anyhow::Result<Vec<u8>> {
        let version = wamr_compiler_sys::WAMR_VERSION;
        if version != RuntimeId::Wamr.locked_version() {
            bail!(
                "this compiler is built from WAMR {version} ({}), but artifacts would be labelled WAMR {}; \
                 update the wamrx-sys entry in artifact/build.rs",
                wamr_compiler_sys::WAMR_SOURCES,
                RuntimeId::Wamr.locked_version()
            );
        }
        if wamr_profile::declares_start_function(wasm) {
            bail!(
                "the module declares a start function; WAMR runs it while instantiating, where the executor cannot \
                 bound it in time, so the WAMR backend does not accept such modules"
            );
        }
        wamr_profile::check_tables(wasm).map_err(anyhow::Error::msg)?;
        let target = target::for_triple(target, cpu)?;
        let aot = aot::compile(wasm, &target, options.xip)?;
        Ok(wamr_profile::wrap(
            &wamr_profile::tag(version, target.profile, &target.code),
            &aot,
        ))
    }
}

fn main() -> ExitCode {
    wasm_precompile::run_main(Wamr)
}

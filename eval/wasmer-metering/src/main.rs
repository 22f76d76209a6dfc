//! `wasmer-metering MODULE.wasm [PARAMS-JSON] [RUNS]`: the cost of wasmer's metering middleware
//! on a CPU-bound action, the time-limit mechanism the wasmer backend did not take.
//!
//! Compiles the module twice with LLVM and the executor's profile, once plain and once with
//! `wasmer_middlewares::Metering` (one point per operator, a limit that is never reached), and
//! times `_start` of fresh instances of both, interleaved. The guest gets its parameters as
//! argv[1] through a few stub WASI functions; this is a measurement, not an executor.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use wasmer::{
    Engine, Function, FunctionEnv, FunctionEnvMut, Imports, Instance, Memory, Module, Store,
    sys::{CompilerConfig, EngineBuilder, LLVM, LLVMOptLevel},
};
use wasmer_middlewares::{Metering, metering};

const WASI: &str = "wasi_snapshot_preview1";

/// Stops the guest at `proc_exit`.
#[derive(Debug)]
struct Exit(i32);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}", self.0)
    }
}

impl std::error::Error for Exit {}

struct Env {
    memory: Option<Memory>,
    args: Vec<Vec<u8>>,
}

fn engine(metered: bool) -> Engine {
    let mut llvm = LLVM::new();
    llvm.opt_level(LLVMOptLevel::Aggressive);
    if metered {
        llvm.push_middleware(Arc::new(Metering::new(u64::MAX, |_| 1)));
    }
    EngineBuilder::new(llvm)
        .set_target(Some(wasmer_profile::host_target()))
        .set_features(Some(wasmer_profile::features()))
        .engine()
        .into()
}

fn write(env: &FunctionEnvMut<'_, Env>, ptr: u32, bytes: &[u8]) -> Result<(), Exit> {
    let memory = env.data().memory.as_ref().ok_or(Exit(-1))?;
    memory
        .view(env)
        .write(u64::from(ptr), bytes)
        .map_err(|_| Exit(-2))
}

fn read_u32(env: &FunctionEnvMut<'_, Env>, ptr: u32) -> Result<u32, Exit> {
    let memory = env.data().memory.as_ref().ok_or(Exit(-1))?;
    let mut buf = [0u8; 4];
    memory
        .view(env)
        .read(u64::from(ptr), &mut buf)
        .map_err(|_| Exit(-2))?;
    Ok(u32::from_le_bytes(buf))
}

fn imports(store: &mut Store, env: &FunctionEnv<Env>) -> Imports {
    let mut imports = Imports::new();
    let args_sizes = |env: FunctionEnvMut<'_, Env>, count: u32, size: u32| -> Result<i32, Exit> {
        let total: usize = env.data().args.iter().map(|a| a.len() + 1).sum();
        write(&env, count, &(env.data().args.len() as u32).to_le_bytes())?;
        write(&env, size, &(total as u32).to_le_bytes())?;
        Ok(0)
    };
    let args_get = |env: FunctionEnvMut<'_, Env>, list: u32, buf: u32| -> Result<i32, Exit> {
        let mut at = buf;
        for (i, arg) in env.data().args.clone().iter().enumerate() {
            write(&env, list + 4 * i as u32, &at.to_le_bytes())?;
            write(&env, at, &[arg.as_slice(), &[0]].concat())?;
            at += arg.len() as u32 + 1;
        }
        Ok(0)
    };
    let empty_sizes = |env: FunctionEnvMut<'_, Env>, count: u32, size: u32| -> Result<i32, Exit> {
        write(&env, count, &0u32.to_le_bytes())?;
        write(&env, size, &0u32.to_le_bytes())?;
        Ok(0)
    };
    let nothing = |_env: FunctionEnvMut<'_, Env>, _a: u32, _b: u32| -> i32 { 0 };
    let fd_read = |env: FunctionEnvMut<'_, Env>,
                   _fd: u32,
                   _iovs: u32,
                   _n: u32,
                   read: u32|
     -> Result<i32, Exit> {
        write(&env, read, &0u32.to_le_bytes())?;
        Ok(0)
    };
    let fd_write = |env: FunctionEnvMut<'_, Env>,
                    _fd: u32,
                    iovs: u32,
                    n: u32,
                    written: u32|
     -> Result<i32, Exit> {
        let mut total = 0;
        for i in 0..n {
            total += read_u32(&env, iovs + 8 * i + 4)?;
        }
        write(&env, written, &total.to_le_bytes())?;
        Ok(0)
    };
    let proc_exit =
        |_env: FunctionEnvMut<'_, Env>, code: i32| -> Result<(), Exit> { Err(Exit(code)) };
    imports.define(
        WASI,
        "args_sizes_get",
        Function::new_typed_with_env(store, env, args_sizes),
    );
    imports.define(
        WASI,
        "args_get",
        Function::new_typed_with_env(store, env, args_get),
    );
    imports.define(
        WASI,
        "environ_sizes_get",
        Function::new_typed_with_env(store, env, empty_sizes),
    );
    imports.define(
        WASI,
        "environ_get",
        Function::new_typed_with_env(store, env, nothing),
    );
    imports.define(
        WASI,
        "fd_read",
        Function::new_typed_with_env(store, env, fd_read),
    );
    imports.define(
        WASI,
        "fd_write",
        Function::new_typed_with_env(store, env, fd_write),
    );
    imports.define(
        WASI,
        "proc_exit",
        Function::new_typed_with_env(store, env, proc_exit),
    );
    imports
}

/// One fresh instance running `_start`; returns its duration and, when metered, the points used.
fn run_once(
    engine: &Engine,
    module: &Module,
    params: &str,
    metered: bool,
) -> anyhow::Result<(Duration, Option<u64>)> {
    let mut store = Store::new(engine.clone());
    let env = FunctionEnv::new(
        &mut store,
        Env {
            memory: None,
            args: vec![b"hash".to_vec(), params.as_bytes().to_vec()],
        },
    );
    let imports = imports(&mut store, &env);
    let instance = Instance::new(&mut store, module, &imports).context("instantiating")?;
    env.as_mut(&mut store).memory = Some(instance.exports.get_memory("memory")?.clone());
    let start = instance.exports.get_function("_start")?.clone();
    let started = Instant::now();
    match start.call(&mut store, &[]) {
        Ok(_) => {}
        Err(error) => match error.downcast_ref::<Exit>() {
            Some(Exit(0)) => {}
            _ => bail!("the guest failed: {error}"),
        },
    }
    let took = started.elapsed();
    let used = metered.then(
        || match metering::get_remaining_points(&mut store, &instance) {
            metering::MeteringPoints::Remaining(left) => u64::MAX - left,
            metering::MeteringPoints::Exhausted => u64::MAX,
        },
    );
    Ok((took, used))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        bail!("usage: wasmer-metering MODULE.wasm [PARAMS-JSON] [RUNS]");
    };
    // The default: `hash` for about 100 ms natively.
    let params = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| r#"{"iterations":1200000}"#.into());
    let runs: usize = args.get(3).map_or(Ok(15), |s| s.parse())?;
    let wasm = std::fs::read(path).with_context(|| format!("reading {path}"))?;
    let variants: Vec<(bool, Engine, Module)> = [false, true]
        .into_iter()
        .map(|metered| {
            let engine = engine(metered);
            let module = Module::new(&engine, &wasm)?;
            Ok((metered, engine, module))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut times = [Vec::new(), Vec::new()];
    let mut points = None;
    for round in 0..=runs {
        for (i, (metered, engine, module)) in variants.iter().enumerate() {
            let (took, used) = run_once(engine, module, &params, *metered)?;
            // Round 0 warms up; it is not kept.
            if round > 0 {
                times[i].push(took);
                points = points.or(used);
            }
        }
    }
    let [plain, metered] = times.map(median);
    println!(
        "{path} {params}, median of {runs}: plain {:.1} ms, metered {:.1} ms, overhead {:+.1} % ({} points, one per operator)",
        plain.as_secs_f64() * 1e3,
        metered.as_secs_f64() * 1e3,
        (metered.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0,
        points.unwrap_or(0)
    );
    Ok(())
}

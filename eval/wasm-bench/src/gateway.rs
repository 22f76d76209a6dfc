//! `wasm-bench gateway`: the evaluation's OpenWhisk-like front door for load generators that
//! only speak HTTP (the JMeter plans): `POST /invoke/{action}` runs the action through the
//! same container pool the Rust experiments use, on the executor or on the Docker baseline.
//! The action name is a kind (`hash`, `net`, `echo`, `add`) optionally followed by `~` and any
//! suffix; each distinct name is a distinct action with its own containers. Default parameters
//! are bound per kind (the delay server's URL for `net`), as OpenWhisk binds them at creation.

use std::{
    net::{Ipv4Addr, SocketAddr},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};

use crate::{
    invoker::{Invoker, PoolConfig},
    platform::{
        Action, Platform,
        docker::DockerPlatform,
        native::NativePlatform,
        wasm::{WasmOptions, WasmPlatform},
    },
    server::{self, Request, Response},
};

const KINDS: [&str; 4] = ["hash", "net", "echo", "add"];

#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// `wasmtime`, `wasmer`, `wamr` (with --executor), `docker` or `native`.
    #[arg(long)]
    platform: String,
    #[arg(long, default_value = "127.0.0.1:8088")]
    listen: SocketAddr,
    /// The executor build for a Wasm platform.
    #[arg(long, default_value = "target/release/wasm-executor-wasmtime")]
    executor: PathBuf,
    #[arg(long, default_value = "target/release/wasm-precompile")]
    precompiler: PathBuf,
    #[arg(long, default_value = "actions/dist")]
    actions: PathBuf,
    #[arg(long, default_value = "actions/dist/native")]
    native: PathBuf,
    #[arg(long, default_value = "owwasm-baseline")]
    image_prefix: String,
    /// The pool: user memory and memory per container (MB), idle timeout (s).
    #[arg(long, default_value_t = 1024)]
    user_memory_mb: u64,
    #[arg(long, default_value_t = 256)]
    container_memory_mb: u64,
    #[arg(long, default_value_t = 30.0)]
    idle_timeout_secs: f64,
    /// Delay of the server `net` actions call (ms).
    #[arg(long, default_value_t = 300)]
    delay_ms: u64,
}

pub fn run(args: &GatewayArgs) -> anyhow::Result<()> {
    let kinds: Vec<String> = KINDS.map(String::from).to_vec();
    let scratch = std::env::temp_dir().join(format!("wasm-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let platform: Arc<dyn Platform> = match args.platform.as_str() {
        "docker" => Arc::new(DockerPlatform::connect(&args.image_prefix, &kinds)?),
        "native" => Arc::new(NativePlatform::new(&args.native, &kinds)?),
        runtime => Arc::new(WasmPlatform::start(&WasmOptions {
            name: runtime.to_owned(),
            runtime: runtime.to_owned(),
            executor: args.executor.clone(),
            precompiler: args.precompiler.clone(),
            actions: args.actions.clone(),
            modules: kinds.clone(),
            scratch: scratch.clone(),
            extra_args: Vec::new(),
        })?),
    };
    let mut binds: Vec<SocketAddr> = vec![(Ipv4Addr::LOCALHOST, 0).into()];
    if !platform.host_address().is_loopback() {
        binds.push(SocketAddr::new(platform.host_address(), 0));
    }
    let delay = server::delay_server(&binds, Duration::from_millis(args.delay_ms))?;
    let net_url = format!("http://{}:{}/", platform.host_address(), delay.port());
    let invoker = Invoker::start(
        Arc::clone(&platform),
        PoolConfig {
            user_memory_mb: args.user_memory_mb,
            container_memory_mb: args.container_memory_mb as f64,
            ..PoolConfig::openwhisk(Duration::from_secs_f64(args.idle_timeout_secs))
        },
    );
    let name = platform.name().to_owned();
    let handler = {
        let invoker = Arc::clone(&invoker);
        move |request: Request| -> server::Answer {
            let (invoker, name, net_url) = (Arc::clone(&invoker), name.clone(), net_url.clone());
            Box::pin(async move { handle(&invoker, &name, &net_url, &request).await })
        }
    };
    let server = server::Server::start(&[args.listen], Arc::new(handler))
        .with_context(|| format!("listening on {}", args.listen))?;
    tracing::info!(addr = %server.addrs[0], platform = %args.platform, "gateway ready");
    wait_for_termination();
    tracing::info!("gateway stopping");
    drop(server);
    invoker.shutdown();
    drop(platform);
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

async fn handle(invoker: &Invoker, platform: &str, net_url: &str, request: &Request) -> Response {
    let error = |status, message: String| Response::json(status, &json!({"error": message}));
    if request.method == "GET" && request.path == "/health" {
        return Response::json(200, &json!({"platform": platform}));
    }
    let Some(name) = request.path.strip_prefix("/invoke/") else {
        return error(404, format!("no route {} {}", request.method, request.path));
    };
    if request.method != "POST" {
        return error(405, "use POST /invoke/{action}".into());
    }
    let kind = name.split('~').next().unwrap_or_default();
    if !KINDS.contains(&kind) {
        return error(
            404,
            format!("unknown action kind {kind:?}; kinds: {}", KINDS.join(", ")),
        );
    }
    let params: Value = if request.body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&request.body) {
            Ok(v @ Value::Object(_)) => v,
            _ => return error(400, "the body must be a JSON object of parameters".into()),
        }
    };
    let bound = if kind == "net" {
        json!({"url": net_url})
    } else {
        json!({})
    };
    let action = Action::new(name, kind, bound);
    match invoker.invoke(&action, &params).await {
        Ok(activation) => Response {
            status: activation.result.status,
            headers: vec![
                ("X-Cold-Start".into(), activation.cold.to_string()),
                ("X-Platform".into(), platform.to_owned()),
            ],
            body: activation.result.body,
        },
        Err(e) => error(502, format!("{e:#}")),
    }
}

/// Blocks until SIGINT or SIGTERM.
fn wait_for_termination() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STOP: AtomicBool = AtomicBool::new(false);
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
}

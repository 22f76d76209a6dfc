//! Command-line flags and environment variables that configure one executor process.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::{Parser, ValueEnum};

/// Runs OpenWhisk actions as WebAssembly modules behind OpenWhisk's action-container protocol.
///
/// Every flag can also be given as the environment variable named in brackets.
#[derive(Debug, Clone, Parser)]
#[command(name = "wasm-executor", version)]
pub struct Config {
    /// Address the HTTP API listens on.
    #[arg(long, env = "WASM_EXECUTOR_LISTEN", default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,

    /// Threads in the blocking pool that runs guest code and compiles modules.
    #[arg(long, env = "WASM_EXECUTOR_POOL_THREADS", default_value_t = 64)]
    pub pool_threads: usize,

    /// Where guest work (prepare at /init, the guest at /run) runs once admitted. `pool`: on
    /// the blocking pool, while the HTTP workers stay free. `async`: the async (tokio) worker
    /// handling the request blocks until the guest job is done, so the workers serve nothing
    /// else meanwhile; the design the pool replaced, kept only for the evaluation.
    #[arg(
        long,
        env = "WASM_EXECUTOR_GUEST_EXECUTION",
        value_enum,
        default_value_t = GuestExecution::Pool
    )]
    pub guest_execution: GuestExecution,

    /// Activations (and inits) executing at once; each holds one Wasm instance.
    #[arg(long, env = "WASM_EXECUTOR_MAX_CONCURRENT", default_value_t = 64)]
    pub max_concurrent: usize,

    /// Activations allowed to wait for a free slot; beyond that the executor answers 503 so
    /// OpenWhisk reschedules the activation.
    #[arg(long, env = "WASM_EXECUTOR_QUEUE_DEPTH", default_value_t = 256)]
    pub queue_depth: usize,

    /// Memory limit (MB of linear memory) for containers whose /init gives none.
    #[arg(long, env = "WASM_EXECUTOR_DEFAULT_MEMORY_MB", default_value_t = 256)]
    pub default_memory_mb: u64,

    /// Largest memory limit (MB) an /init may ask for.
    #[arg(long, env = "WASM_EXECUTOR_MAX_MEMORY_MB", default_value_t = 2048)]
    pub max_memory_mb: u64,

    /// Time limit (ms) for activations that carry no deadline and whose /init gives no timeout.
    #[arg(
        long,
        env = "WASM_EXECUTOR_DEFAULT_TIMEOUT_MS",
        default_value_t = 60_000
    )]
    pub default_timeout_ms: u64,

    /// Log bytes kept per activation (MB) when /init gives no `limits.logs`.
    #[arg(long, env = "WASM_EXECUTOR_DEFAULT_LOG_MB", default_value_t = 10)]
    pub default_log_mb: u64,

    /// Value of `__OW_API_HOST` for every guest.
    #[arg(long, env = "WASM_EXECUTOR_API_HOST", default_value = "")]
    pub api_host: String,

    /// Directory for compiled-module caches (created if absent).
    #[arg(
        long,
        env = "WASM_EXECUTOR_CACHE_DIR",
        default_value = "/tmp/wasm-executor-cache"
    )]
    pub cache_dir: PathBuf,

    /// Largest request body (MB); an /init carries the base64 of the whole action.
    #[arg(long, env = "WASM_EXECUTOR_MAX_BODY_MB", default_value_t = 64)]
    pub max_body_mb: usize,

    /// Public key (PEM) whose signatures on precompiled artifacts are trusted; repeatable.
    #[arg(
        long = "trusted-key",
        env = "WASM_EXECUTOR_TRUSTED_KEYS",
        value_delimiter = ','
    )]
    pub trusted_keys: Vec<PathBuf>,

    /// Load precompiled artifacts that carry no signature. Precompiled artifacts are native
    /// code: only use this when everyone who can create actions is trusted.
    #[arg(long, env = "WASM_EXECUTOR_ALLOW_UNSIGNED_ARTIFACTS")]
    pub allow_unsigned_artifacts: bool,

    /// Host directory under which the `dir` annotation may grant directories.
    #[arg(long, env = "WASM_EXECUTOR_DIR_ROOT", default_value = "/tmp")]
    pub dir_root: PathBuf,

    /// Hosts (`host` or `host:port`) the HTTP GET capability may reach even when they resolve
    /// to loopback or private addresses; `*` allows every host. Public hosts are always allowed.
    #[arg(
        long = "net-allow",
        env = "WASM_EXECUTOR_NET_ALLOW",
        value_delimiter = ','
    )]
    pub net_allow: Vec<String>,

    /// Timeout (ms) of one HTTP GET made by a guest (also bounded by the activation deadline).
    #[arg(long, env = "WASM_EXECUTOR_NET_TIMEOUT_MS", default_value_t = 30_000)]
    pub net_timeout_ms: u64,

    /// Largest response body (KB) one HTTP GET may return to a guest.
    #[arg(long, env = "WASM_EXECUTOR_NET_MAX_BODY_KB", default_value_t = 4096)]
    pub net_max_body_kb: u64,
}

/// Where admitted guest work runs (`--guest-execution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GuestExecution {
    /// On the bounded blocking pool (`--pool-threads`); the async workers only wait for it.
    Pool,
    /// Blocking the async worker that handles the request (for the evaluation only).
    Async,
}

impl Config {
    pub fn default_timeout(&self) -> Duration {
        Duration::from_millis(self.default_timeout_ms)
    }
}

//! Command-line flags and environment variables that configure one executor process.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Parser, ValueEnum};

/// Runs OpenWhisk actions as WebAssembly modules behind OpenWhisk's action-container protocol.
///
/// Every flag can also be given as the environment variable named in brackets.
#[derive(Debug, Clone, Parser)]
#[command(name = "wasm-executor", version)]
pub struct Config {
    /// Where the HTTP API listens: `HOST:PORT`, or `unix:PATH` for a Unix-domain socket
    /// (created with mode 0600: only the executor's user may connect). A TCP address that is not
    /// loopback needs --auth-token-file, or --insecure-listen.
    #[arg(
        long,
        env = "WASM_EXECUTOR_LISTEN",
        default_value = "127.0.0.1:9000",
        value_parser = Listen::parse
    )]
    pub listen: Listen,

    /// File holding the bearer token every API request but `GET /health` must carry
    /// (`Authorization: Bearer TOKEN`); one line of at least 16 characters, in a file other
    /// users cannot read.
    #[arg(long, env = "WASM_EXECUTOR_AUTH_TOKEN_FILE")]
    pub auth_token_file: Option<PathBuf>,

    /// Host names clients may use in the `Host` header besides loopback names and the listen
    /// address (e.g. the name in the invoker's `whisk.wasm-executor.url`); repeatable.
    #[arg(
        long = "allowed-host",
        env = "WASM_EXECUTOR_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// Listen on a non-loopback TCP address without a token: anyone who can reach it can run
    /// code. Only for networks where nobody else can.
    #[arg(long, env = "WASM_EXECUTOR_INSECURE_LISTEN")]
    pub insecure_listen: bool,

    /// Longest wait (ms) for a request's complete header, counted from the connection's start
    /// or the previous answer: it also ends idle kept-alive connections.
    #[arg(
        long,
        env = "WASM_EXECUTOR_HEADER_TIMEOUT_MS",
        default_value_t = 10_000
    )]
    pub header_timeout_ms: u64,

    /// Slowest rate (KiB/s) at which a request body may arrive: a body of N KiB must be in
    /// within --header-timeout-ms plus N / this many seconds.
    #[arg(long, env = "WASM_EXECUTOR_BODY_MIN_RATE_KB", default_value_t = 64)]
    pub body_min_rate_kb: u64,

    /// Connections open at once (default: half the descriptor limit, which the executor raises
    /// to its hard limit at start). At the cap a new connection replaces the oldest idle one;
    /// when every connection is busy it is answered 503.
    #[arg(long, env = "WASM_EXECUTOR_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Jobs on the blocking pool at once (guests, module loads), each holding a thread of its
    /// own (a guest the one its request came in on: its connection's thread, see
    /// --connection-threads, or an async worker whose other work moves to another meanwhile):
    /// computing with one of the --max-concurrent slots, or waiting on a timer or
    /// the network without one. Beyond it jobs wait in the queue.
    #[arg(long, env = "WASM_EXECUTOR_POOL_THREADS", default_value_t = 256)]
    pub pool_threads: usize,

    /// With `--guest-execution pool` (the wasmer and WAMR builds' default), connections served
    /// each on a thread of its own, which waits for the connection's requests itself and runs
    /// its guests with no async worker to hand over; the connections beyond it are served on
    /// the async workers. 0: all of them are. Each thread's runtime holds 4 descriptors; at
    /// most an eighth of the process's descriptors go to them.
    #[arg(long, env = "WASM_EXECUTOR_CONNECTION_THREADS", default_value_t = 256)]
    pub connection_threads: usize,

    /// Where guests run once admitted. `async` (the wasmtime build's default): on the task of
    /// their request, suspended while they wait on a timer or the network, so a waiting guest
    /// holds neither a thread nor a slot of --max-concurrent; guests with a granted directory,
    /// module loads and the other builds use the pool. `pool`: every guest on the blocking pool,
    /// holding its thread (but not its slot) while it waits. `blocking-worker`: the async
    /// worker handling the request blocks until its guest is done (the design the pool
    /// replaced, kept only for the evaluation).
    #[arg(long, env = "WASM_EXECUTOR_GUEST_EXECUTION", value_enum)]
    pub guest_execution: Option<GuestExecution>,

    /// Activations (and inits) computing at once; a guest waiting on a timer or the network
    /// does not count.
    #[arg(long, env = "WASM_EXECUTOR_MAX_CONCURRENT", default_value_t = 64)]
    pub max_concurrent: usize,

    /// With `--guest-execution async`: guests alive at once on their requests' tasks (running,
    /// waiting for a slot, or waiting on a timer or the network), each with its instance;
    /// beyond it /run answers 503. The instance allocator reserves address space for them.
    #[arg(long, env = "WASM_EXECUTOR_MAX_INSTANCES", default_value_t = 4096)]
    pub max_instances: usize,

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

    /// KiB of an instance's written linear-memory pages reset in place when it ends instead of
    /// being returned to the kernel (wasmtime build): the next guest in its slot takes no page
    /// faults on them and a small guest ends without a system call. Each instance slot that has
    /// run a guest keeps at most this much resident; 0 returns every page.
    #[arg(long, env = "WASM_EXECUTOR_KEEP_RESIDENT_KIB", default_value_t = 128)]
    pub keep_resident_kib: usize,

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

    /// The executor's own directory: the compiled-module cache and the grant root are in it
    /// unless given elsewhere. Default: /var/lib/wasm-executor for root, else
    /// $XDG_STATE_HOME/wasm-executor (~/.local/state/wasm-executor). Created with mode 0700.
    #[arg(long, env = "WASM_EXECUTOR_STATE_DIR")]
    pub state_dir: Option<PathBuf>,

    /// Directory of the compiled-module cache (default: STATE_DIR/cache). Entries are native
    /// code: it must be private to the executor's user and outside --dir-root.
    #[arg(long, env = "WASM_EXECUTOR_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Largest size of the compiled-module cache (MB), and of the kept action states beside it;
    /// the least recently used entries go first.
    #[arg(long, env = "WASM_EXECUTOR_MAX_CACHE_MB", default_value_t = 1024)]
    pub max_cache_mb: u64,

    /// Largest request body (MB); an /init carries the base64 of the whole action.
    #[arg(long, env = "WASM_EXECUTOR_MAX_BODY_MB", default_value_t = 64)]
    pub max_body_mb: usize,

    /// Request bodies (MB) held at once, all requests together; a request that would go past
    /// it is turned away with 503 before its body is read.
    #[arg(long, env = "WASM_EXECUTOR_MAX_PENDING_BODY_MB", default_value_t = 256)]
    pub max_pending_body_mb: usize,

    /// Largest module (MB) an /init may bring, after unzipping; also the most source an
    /// action in JavaScript may bring.
    #[arg(long, env = "WASM_EXECUTOR_MAX_MODULE_MB", default_value_t = 32)]
    pub max_module_mb: usize,

    /// The JavaScript engine (`quickjs.wasm`, built by `actions/build.sh quickjs`): with it,
    /// /init accepts `kind: nodejs:*` actions as source text or zips. Loaded in the background as the
    /// executor starts; each action's code is then evaluated once and its snapshot shared by its
    /// containers.
    #[arg(long, env = "WASM_EXECUTOR_JS_ENGINE")]
    pub js_engine: Option<PathBuf>,

    /// The Python engine (`python.wasm`, built by `actions/build.sh python`): with it, /init
    /// accepts `kind: python:*` actions as source text or zips, loaded and shared as the
    /// JavaScript engine's are.
    #[arg(long, env = "WASM_EXECUTOR_PYTHON_ENGINE")]
    pub python_engine: Option<PathBuf>,

    /// Longest an /init may take to decode, verify and prepare (compile) its module (ms); past
    /// it the /init fails (the compiler thread finishes in the background and its result is
    /// dropped).
    #[arg(long, env = "WASM_EXECUTOR_MAX_INIT_MS", default_value_t = 60_000)]
    pub max_init_ms: u64,

    /// Most containers this executor holds at once (initialized and initializing); beyond it
    /// /init answers 503.
    #[arg(long, env = "WASM_EXECUTOR_MAX_CONTAINERS", default_value_t = 4096)]
    pub max_containers: usize,

    /// Largest time limit (ms) an /init (`limits.timeout`) or a run's deadline may set.
    #[arg(long, env = "WASM_EXECUTOR_MAX_TIMEOUT_MS", default_value_t = 300_000)]
    pub max_timeout_ms: u64,

    /// Largest log limit (MB per activation) an /init (`limits.logs`) may set.
    #[arg(long, env = "WASM_EXECUTOR_MAX_LOG_MB", default_value_t = 10)]
    pub max_log_mb: u64,

    /// Uncollected log lines (MB) all containers together may hold; past it new lines are
    /// dropped with a notice until the invoker collects.
    #[arg(long, env = "WASM_EXECUTOR_MAX_PENDING_LOG_MB", default_value_t = 256)]
    pub max_pending_log_mb: usize,

    /// Largest result (MB) an action may return (OpenWhisk itself keeps 1 MB by default).
    #[arg(long, env = "WASM_EXECUTOR_MAX_RESULT_MB", default_value_t = 4)]
    pub max_result_mb: usize,

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

    /// The only tree under which the `dir` annotation may grant directories (default:
    /// STATE_DIR/grants): a namespace's grants lie in DIR_ROOT/<namespace>/<path the action
    /// names>. Private to the executor's user, apart from its cache and state.
    #[arg(long, env = "WASM_EXECUTOR_DIR_ROOT")]
    pub dir_root: Option<PathBuf>,

    /// Disk (MB) one namespace's granted directories may take together: each namespace gets an
    /// ext4 filesystem of this size (a sparse image in DIR_ROOT/.images, mounted in the
    /// executor's own mount namespace; needs CAP_SYS_ADMIN). 0 turns quotas off.
    #[arg(long, env = "WASM_EXECUTOR_DIR_QUOTA_MB", default_value_t = 512)]
    pub dir_quota_mb: u64,

    /// Files and directories one namespace's granted directories may hold together.
    #[arg(long, env = "WASM_EXECUTOR_DIR_QUOTA_FILES", default_value_t = 16_384)]
    pub dir_quota_files: u64,

    /// Namespaces whose actions may use the `dir` annotation (comma-separated; `*`: every
    /// namespace). Each namespace's directories lie beneath DIR_ROOT/<namespace>.
    #[arg(
        long = "dir-namespaces",
        env = "WASM_EXECUTOR_DIR_NAMESPACES",
        value_delimiter = ',',
        default_value = "*"
    )]
    pub dir_namespaces: Vec<String>,

    /// Namespaces whose actions may use the `net_access` annotation (comma-separated; `*`: every
    /// namespace, also an /init that names none).
    #[arg(
        long = "net-namespaces",
        env = "WASM_EXECUTOR_NET_NAMESPACES",
        value_delimiter = ',',
        default_value = "*"
    )]
    pub net_namespaces: Vec<String>,

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

/// The smallest filesystem (MB) a namespace's quota may make: ext4's journal and tables need
/// about one.
pub const MIN_DIR_QUOTA_MB: u64 = 4;

/// Where the API listens (`--listen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Listen {
    fn parse(text: &str) -> Result<Listen, String> {
        match text.strip_prefix("unix:") {
            Some("") => {
                Err("unix: needs a socket path, e.g. unix:/run/wasm-executor/api.sock".into())
            }
            Some(path) => Ok(Listen::Unix(PathBuf::from(path))),
            None => text
                .parse()
                .map(Listen::Tcp)
                .map_err(|e| format!("{text:?} is neither HOST:PORT nor unix:PATH: {e}")),
        }
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(addr) => write!(f, "{addr}"),
            Listen::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// Where admitted guest work runs (`--guest-execution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GuestExecution {
    /// On the request's own task, suspended while it waits (wasmtime only).
    Async,
    /// On the bounded blocking pool (`--pool-threads`): on the request's thread, its
    /// connection's own (`--connection-threads`) or an async worker whose other tasks the
    /// async runtime moves to another thread while the guest runs.
    Pool,
    /// Blocking the async worker that handles the request (for the evaluation only).
    BlockingWorker,
}

impl GuestExecution {
    /// The flag's value, as `/health` reports it.
    pub fn label(self) -> &'static str {
        match self {
            GuestExecution::Async => "async",
            GuestExecution::Pool => "pool",
            GuestExecution::BlockingWorker => "blocking-worker",
        }
    }
}

impl Config {
    /// Checks that the settings agree (every default within its maximum) and fills in where
    /// guests run by default: `async` where the backend `suspends_guests` (wasmtime), else `pool`.
    pub fn validate(&mut self, suspends_guests: bool) -> Result<(), String> {
        for (default, max, what) in [
            (self.default_memory_mb, self.max_memory_mb, "memory (MB)"),
            (self.default_timeout_ms, self.max_timeout_ms, "timeout (ms)"),
            (self.default_log_mb, self.max_log_mb, "log (MB)"),
        ] {
            if default > max {
                return Err(format!(
                    "the default {what} limit {default} is above the largest allowed, {max}"
                ));
            }
        }
        if self.dir_quota_mb != 0 && self.dir_quota_mb < MIN_DIR_QUOTA_MB {
            return Err(format!(
                "--dir-quota-mb {} is below the smallest filesystem a namespace can get, {MIN_DIR_QUOTA_MB} MB (0 turns quotas off)",
                self.dir_quota_mb
            ));
        }
        if self.dir_quota_files == 0 {
            return Err("--dir-quota-files must be at least 1".into());
        }
        match self.guest_execution {
            Some(GuestExecution::Async) if !suspends_guests => {
                return Err(
                    "--guest-execution async needs the wasmtime build; use pool or blocking-worker"
                        .into(),
                );
            }
            Some(_) => {}
            None if suspends_guests => self.guest_execution = Some(GuestExecution::Async),
            None => self.guest_execution = Some(GuestExecution::Pool),
        }
        Ok(())
    }

    /// Where guests run (`--guest-execution`, filled in by [`Config::validate`]).
    pub fn guest_execution(&self) -> GuestExecution {
        self.guest_execution.unwrap_or(GuestExecution::Pool)
    }

    /// The per-namespace quota of directory grants, `None` when the operator turned it off.
    pub fn dir_quota(&self) -> Option<crate::namespace_volumes::Quota> {
        (self.dir_quota_mb > 0).then_some(crate::namespace_volumes::Quota {
            bytes: self.dir_quota_mb << 20,
            files: self.dir_quota_files,
        })
    }

    /// Wasm instances that may be alive at once, which the backend's allocator provides for:
    /// those on the pool (one per thread) and, in async execution, the guests on their tasks.
    pub fn instance_slots(&self) -> usize {
        match self.guest_execution() {
            GuestExecution::Async => self.max_instances.saturating_add(self.pool_threads),
            GuestExecution::Pool | GuestExecution::BlockingWorker => self.pool_threads,
        }
    }

    /// The pool's threads and the guests on their tasks, given the instances the backend
    /// `held` (`None`: as many as asked for). Where it holds fewer than
    /// [`Config::instance_slots`] (a small address space), the pool gets at most half of them
    /// in async execution (all in the others) and the guests on their tasks the rest.
    pub fn instance_split(&self, held: Option<usize>) -> (usize, usize) {
        match held {
            Some(held) if held < self.instance_slots() => {
                let share = match self.guest_execution() {
                    GuestExecution::Async => held / 2,
                    GuestExecution::Pool | GuestExecution::BlockingWorker => held,
                };
                let threads = self.pool_threads.min(share).max(1);
                let tasks = held
                    .saturating_sub(threads)
                    .clamp(1, self.max_instances.max(1));
                (threads, tasks)
            }
            _ => (self.pool_threads, self.max_instances),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: GuestExecution) -> Config {
        let mut config = Config::parse_from(["wasm-executor"]);
        config.guest_execution = Some(mode);
        config
    }

    /// With all the instances asked for, every setting stands; with fewer, async execution
    /// splits them between the pool and the guests on their tasks, and the pool builds give
    /// the pool all of them.
    #[test]
    fn fewer_instances_than_asked_are_split() {
        let async_mode = config(GuestExecution::Async);
        assert_eq!(async_mode.instance_slots(), 4096 + 256);
        assert_eq!(async_mode.instance_split(None), (256, 4096));
        assert_eq!(async_mode.instance_split(Some(4096 + 256)), (256, 4096));
        // A 39-bit address space holds about a hundred 4 GiB reservations.
        assert_eq!(async_mode.instance_split(Some(68)), (34, 34));
        let pool = config(GuestExecution::Pool);
        assert_eq!(pool.instance_slots(), 256);
        assert_eq!(pool.instance_split(Some(100)), (100, 1));
        assert_eq!(pool.instance_split(Some(256)), (256, 4096));
    }
}

//! Starting an executor: logging, the process settings every backend relies on, the
//! configuration, and the API served until SIGTERM, for the backend a runtime's binary names.

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;
use wasm_artifact::TrustedKeys;

use crate::{
    api,
    backend::Backend,
    config::{Config, Listen},
    connection_threads, guard, namespace_volumes, pool, server,
    service::Executor,
};

/// Runs the executor with backend `B`: what each runtime's `main` calls.
pub fn run<B: Backend>() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    ignore_stray_signals();
    return_large_buffers_to_the_kernel();
    let mut config = Config::parse();
    config
        .validate(B::SUSPENDS_GUESTS)
        .map_err(anyhow::Error::msg)?;
    let trusted_keys = TrustedKeys::load(&config.trusted_keys)?;
    if config.allow_unsigned_artifacts {
        tracing::warn!(
            "unsigned precompiled artifacts will be loaded: only for trusted action authors"
        );
    }
    let isolated = match config.dir_quota() {
        Some(_) => namespace_volumes::isolate_mounts(),
        None => Ok(()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("http")
        .max_blocking_threads(pool::blocking_threads(config.pool_threads))
        .build()
        .context("starting the async runtime")?;
    // The server runs as a task of the runtime rather than on this thread: a connection it
    // accepts is then queued on the accepting worker and usually served right there, where
    // from this thread each one would wake a worker (a futex wake and a context switch).
    runtime.block_on(async move {
        tokio::spawn(serve::<B>(config, trusted_keys, isolated))
            .await
            .context("the server task")?
    })
}

/// SIGUSR1 and SIGUSR2 would end the process by default; the backends that use them (wasmer's
/// interrupt, WAMR's wake-up, the host-call unblocker) install their own handlers over this, so
/// one sent by another program (a log rotator, a mistaken `kill -USR1`) changes nothing.
fn ignore_stray_signals() {
    for signal in [libc::SIGUSR1, libc::SIGUSR2] {
        // SAFETY: setting a signal's disposition to SIG_IGN before any thread starts.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
}

/// glibc's malloc raises its mmap threshold each time a large block is freed, so that later
/// large buffers (request bodies, module bytes, results, log captures) are carved out of the
/// per-thread arenas, which return little to the kernel: with dozens of pool threads the
/// executor's RSS crept up by a fifth in a ten-minute soak. A fixed threshold keeps every block
/// of 1 MiB or more in a mapping of its own, unmapped when it is freed.
fn return_large_buffers_to_the_kernel() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Serves the API until SIGTERM or Ctrl-C; `isolated` says whether the process has a mount
/// namespace of its own for the namespaces' quotas.
async fn serve<B: Backend>(
    mut config: Config,
    trusted_keys: TrustedKeys,
    isolated: Result<(), String>,
) -> anyhow::Result<()> {
    let listen = config.listen.clone();
    let header_timeout = std::time::Duration::from_millis(config.header_timeout_ms);
    let gate = api::Gate::new(
        api_guard(&config)?,
        config.max_body_mb << 20,
        config.max_pending_body_mb << 20,
        header_timeout,
        config.body_min_rate_kb << 10,
    );
    let descriptors = server::raise_descriptor_limit();
    let connection_threads =
        connection_threads::within_descriptors(config.connection_threads, descriptors);
    if connection_threads < config.connection_threads {
        tracing::warn!(
            wanted = config.connection_threads,
            connection_threads,
            descriptors,
            "fewer connection threads than configured: each takes descriptors of its own"
        );
        config.connection_threads = connection_threads;
    }
    let limits = server::ConnectionLimits {
        header_timeout,
        max_connections: config
            .max_connections
            .unwrap_or_else(|| server::default_max_connections(descriptors))
            .max(1),
    };
    let keys = trusted_keys.len();
    let executor = Arc::new(Executor::<B>::new(config, trusted_keys, isolated)?);
    // The executor is never torn down: at exit the kernel reclaims its memory at once, while
    // dropping it can take longer than any stop timeout (wasmer's engine deregisters the
    // unwind info of every module it ever loaded frame by frame, quadratic in libgcc: over
    // 30 s after sixteen debug builds of one action).
    let _never_dropped = std::mem::ManuallyDrop::new(Arc::clone(&executor));
    executor.preload_engines();
    let api_server = server::Server {
        router: api::router(Arc::clone(&executor), gate),
        limits,
        threads: executor.connection_threads(),
    };
    let ready = |address: String| {
        tracing::info!(
            address,
            max_connections = limits.max_connections,
            descriptors,
            runtime = executor.runtime_name(),
            version = executor.runtime_version(),
            trusted_keys = keys,
            "wasm-executor listening"
        )
    };
    match listen {
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            ready(listener.local_addr()?.to_string());
            server::serve(listener, api_server, shutdown_signal()).await;
        }
        Listen::Unix(path) => {
            let listener = bind_unix(&path)?;
            ready(format!("unix:{}", path.display()));
            server::serve(listener, api_server, shutdown_signal()).await;
        }
    }
    Ok(())
}

/// The API's gatekeeper from the configuration; a TCP address beyond loopback without a token
/// is refused unless the operator insists.
fn api_guard(config: &Config) -> anyhow::Result<guard::ApiGuard> {
    let token = config
        .auth_token_file
        .as_deref()
        .map(guard::read_token)
        .transpose()?;
    let listen_ip = match &config.listen {
        Listen::Tcp(addr) => Some(addr.ip()),
        Listen::Unix(_) => None,
    };
    if let Some(ip) = listen_ip
        && !ip.is_loopback()
        && token.is_none()
    {
        if !config.insecure_listen {
            anyhow::bail!(
                "refusing to listen on {ip} without --auth-token-file: anyone who reaches it could run code here \
                 (give a token, listen on loopback or unix:PATH, or pass --insecure-listen)"
            );
        }
        tracing::warn!(%ip, "listening beyond loopback without a token (--insecure-listen)");
    }
    Ok(guard::ApiGuard::new(
        listen_ip,
        &config.allowed_hosts,
        token,
    ))
}

/// A Unix-domain socket at `path` that only this user may connect to; a stale socket left by
/// an earlier run is replaced, anything else at that path is not.
fn bind_unix(path: &std::path::Path) -> anyhow::Result<tokio::net::UnixListener> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .with_context(|| format!("removing the stale socket {}", path.display()))?,
        Ok(_) => anyhow::bail!("{} exists and is not a socket", path.display()),
        Err(_) => {}
    }
    // Created inside a private umask, so no other user can connect between bind and chmod.
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = tokio::net::UnixListener::bind(path);
    rustix::process::umask(old);
    let listener = bound.with_context(|| format!("binding {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("restricting {}", path.display()))?;
    Ok(listener)
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term.recv() => {},
    }
    tracing::info!("shutting down");
}

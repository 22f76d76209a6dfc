//! `wasm-executor`: an OpenWhisk action-container endpoint that runs actions as WebAssembly.

mod api;
mod backend;
mod capabilities;
mod code;
mod config;
mod logs;
mod metrics;
mod net;
mod outcome;
mod pool;
mod protocol;
mod registry;
mod service;

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;
use wasm_artifact::TrustedKeys;

use crate::{config::Config, service::Executor};

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let config = Config::parse();
    let trusted_keys = TrustedKeys::load(&config.trusted_keys)?;
    if config.allow_unsigned_artifacts {
        tracing::warn!(
            "unsigned precompiled artifacts will be loaded: only for trusted action authors"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("http")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(serve(config, trusted_keys))
}

async fn serve(config: Config, trusted_keys: TrustedKeys) -> anyhow::Result<()> {
    let listen = config.listen;
    let max_body = config.max_body_mb << 20;
    let keys = trusted_keys.len();
    let executor = Arc::new(Executor::new(config, trusted_keys)?);
    // The executor is never torn down: at exit the kernel reclaims its memory at once, while
    // dropping it can take longer than any stop timeout (wasmer's engine deregisters the
    // unwind info of every module it ever loaded frame by frame, quadratic in libgcc: over
    // 30 s after sixteen debug builds of one action).
    let _never_dropped = std::mem::ManuallyDrop::new(Arc::clone(&executor));
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    tracing::info!(
        address = %listener.local_addr()?,
        runtime = executor.runtime_name(),
        version = executor.runtime_version(),
        trusted_keys = keys,
        "wasm-executor listening"
    );
    axum::serve(listener, api::router(executor, max_body))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("serving HTTP")
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

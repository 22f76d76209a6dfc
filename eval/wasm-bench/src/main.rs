//! `wasm-bench`: benchmarks the wasm-executor over its HTTP API with per-request records.
//! `wasm-bench evaluate` runs the evaluation against the Docker baseline (eval/RESULTS.md);
//! `gateway` fronts a platform for JMeter; `hash` and `footprint` compare executor builds (two
//! of the evaluation's experiments on their own); `soak` mixes hostile and benign activations
//! for minutes.

mod affinity;
mod cpu;
mod evaluation;
mod executor;
mod failures;
mod footprint;
mod gateway;
mod hash;
use wasm_executor_testkit::http;
mod invoker;
mod metrics;
mod platform;
mod precompile;
mod provenance;
mod report;
mod rss;
mod runtime;
mod server;
mod serverlog;
mod soak;
mod stats;
mod workload;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(
    name = "wasm-bench",
    version,
    about = "Benchmarks for the wasm-executor"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The evaluation against the vanilla Docker baseline: cold starts (one at a time and at
    /// saturation), I/O-, CPU-bound, mixed and realistic load, capacity in a memory budget,
    /// access patterns, memory, threading model, platform cost, /init, on every platform given
    /// (and, when asked for, `hash` and `footprint` on the executor builds).
    Evaluate(Box<evaluation::EvaluateArgs>),
    /// Serves `POST /invoke/{action}` through an OpenWhisk-like pool on one platform (for the
    /// JMeter plans in eval/jmeter) until SIGINT or SIGTERM.
    Gateway(gateway::GatewayArgs),
    /// CPU-bound throughput: the `hash` action in each executor given, precompiled and
    /// portable, against the same source built as a native binary (the evaluation's `hash`
    /// experiment on its own).
    Hash(hash::HashArgs),
    /// Memory per container (idle RSS, RSS per warm container) and /init and warm /run latency,
    /// precompiled and portable, in each executor given (the evaluation's `footprint`
    /// experiment on its own).
    Footprint(footprint::FootprintArgs),
    /// The soak run: benign and hostile activations mixed for minutes; the executor's RSS and
    /// open descriptors must stay flat and benign requests must not fail (`make soak`).
    Soak(soak::SoakArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Evaluate(args) => evaluation::run(&args),
        Command::Gateway(args) => gateway::run(&args),
        Command::Hash(args) => hash::run(&args),
        Command::Footprint(args) => footprint::run(&args),
        Command::Soak(args) => soak::run(&args),
    }
}

//! The executor as a library, generic over the Wasm runtime: the OpenWhisk action-container API,
//! containers, grants, limits and logs. Each runtime's binary (`wasm-executor-wasmtime`,
//! `-wasmer`, `-wasmer-headless`, `-wamr`) implements [`backend::Backend`] and calls
//! [`run`].

pub mod api;
pub mod backend;
pub mod capability;
pub mod config;
pub mod connection_threads;
pub mod engine_artifact;
pub mod engine_start;
pub mod error;
pub mod guard;
pub mod host_io;
pub mod language;
pub mod lingering;
pub mod logs;
pub mod loop_device;
pub mod metrics;
pub mod namespace_volumes;
pub mod net;
pub mod outcome;
pub mod pool;
pub mod registry;
pub mod server;
pub mod service;
pub mod shared_code;
pub mod startup;
pub mod state;

pub use startup::run;
/// The decoders of untrusted input (their own crate, which the fuzz targets build alone).
pub use wasm_executor_decode::{code, protocol};

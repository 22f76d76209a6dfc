//! The host state one activation's imports share, and how a host function stops its guest.

use std::sync::Arc;

use thiserror::Error;
use wasmer::Memory;

use super::{deadline::RunClock, http_import::HeldBody, wasi::WasiCtx};
use wasm_executor::{net::HttpGetter, pool::CpuSlot};

/// The `FunctionEnv` data of one activation's store.
pub struct RunEnv {
    /// The instance's exported `memory`, set right after instantiation.
    pub memory: Option<Memory>,
    pub wasi: WasiCtx,
    pub net: Option<Arc<HttpGetter>>,
    pub held: HeldBody,
    pub clock: Arc<RunClock>,
    /// The guest's CPU slot, given back while it waits in `poll_oneoff` or `http_get`.
    pub cpu: CpuSlot,
}

/// Why a host function ends the activation instead of returning to the guest. It travels
/// through wasmer as a user error of the trap and is recovered by downcasting.
#[derive(Debug, Error)]
pub enum HostStop {
    #[error("the guest exited with status {0}")]
    Exit(i32),
    #[error("the activation's deadline passed")]
    Deadline,
    #[error("{0}")]
    Fault(String),
}

//! The host state one activation's imports share: the store data that gives WASI and the HTTP
//! import what each of them works with.

use std::sync::Arc;

use wasmer::Memory;

use super::{
    deadline::RunClock,
    http_import::{HttpEnv, HttpParts},
    wasi::{WasiCtx, WasiEnv, WasiParts},
};
use wasm_executor::{backend::http_import::HeldBody, net::HttpGetter, pool::CpuSlot};

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

impl WasiEnv for RunEnv {
    fn clock(&self) -> &Arc<RunClock> {
        &self.clock
    }

    fn wasi_parts(&mut self) -> WasiParts<'_> {
        WasiParts {
            memory: self.memory.as_ref(),
            ctx: &mut self.wasi,
            cpu: &mut self.cpu,
        }
    }
}

impl HttpEnv for RunEnv {
    fn clock(&self) -> &Arc<RunClock> {
        &self.clock
    }

    fn http_parts(&mut self) -> HttpParts<'_> {
        HttpParts {
            memory: self.memory.as_ref(),
            getter: self.net.as_ref(),
            held: &mut self.held,
            cpu: &mut self.cpu,
        }
    }
}

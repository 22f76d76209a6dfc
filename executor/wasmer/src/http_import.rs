//! The `openwhisk::http_get` / `openwhisk::http_read` imports for wasmer: marshalling between
//! guest memory and the library's [`http_import`] (its policy and held body). Linked only for
//! `net_access` actions; their twins `http_try_get`/`http_try_read` for every module.

use std::{sync::Arc, time::Instant};

use wasmer::{Function, FunctionEnv, FunctionEnvMut, Memory, MemoryView, Store};

use super::{deadline::RunClock, stop::HostStop};
use wasm_executor::{
    backend::http_import::{self, HeldBody, HttpImportFault, Pair},
    net::HttpGetter,
    pool::CpuSlot,
};

/// What the store data of an activation gives the HTTP import.
pub trait HttpEnv: Send + 'static {
    fn clock(&self) -> &Arc<RunClock>;
    fn http_parts(&mut self) -> HttpParts<'_>;
}

/// The parts of an activation's state the HTTP import works with.
pub struct HttpParts<'a> {
    /// The exported memory, once instantiated.
    pub memory: Option<&'a Memory>,
    /// The action's getter (with `net_access`).
    pub getter: Option<&'a Arc<HttpGetter>>,
    pub held: &'a mut HeldBody,
    /// The guest's CPU slot, given back while a request waits.
    pub cpu: &'a mut CpuSlot,
}

/// Builds `openwhisk::<name>` for one store, or `None` for a name the module does not have.
pub fn function<E: HttpEnv>(
    store: &mut Store,
    env: &FunctionEnv<E>,
    name: &str,
) -> Option<Function> {
    match name {
        "http_get" => Some(Function::new_typed_with_env(store, env, http_get::<E>)),
        "http_read" => Some(Function::new_typed_with_env(store, env, http_read::<E>)),
        _ => None,
    }
}

/// Builds the twin `openwhisk::<name>` every module may import, or `None` for another name.
pub fn twin<E: HttpEnv>(store: &mut Store, env: &FunctionEnv<E>, name: &str) -> Option<Function> {
    match name {
        http_import::TRY_GET => Some(Function::new_typed_with_env(store, env, http_try_get::<E>)),
        http_import::TRY_READ => Some(Function::new_typed_with_env(store, env, http_read::<E>)),
        _ => None,
    }
}

/// Runs `body` between the deadline checks every host function makes (see `deadline.rs`).
fn guarded<E: HttpEnv>(
    fenv: &mut FunctionEnvMut<'_, E>,
    body: impl FnOnce(HttpParts<'_>, &MemoryView<'_>, Instant) -> Result<i32, HttpImportFault>,
) -> Result<i32, HostStop> {
    let clock = Arc::clone(fenv.data().clock());
    clock.enter()?;
    let (data, store) = fenv.data_and_store_mut();
    let parts = data.http_parts();
    let result = match parts.memory {
        Some(memory) => body(parts, &memory.view(&store), clock.deadline()),
        None => Err(HttpImportFault::NoMemory),
    };
    clock.leave()?;
    result.map_err(|fault| HostStop::Fault(fault.to_string()))
}

fn http_get<E: HttpEnv>(
    fenv: FunctionEnvMut<'_, E>,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> Result<i32, HostStop> {
    get(
        fenv,
        Pair::Capability,
        url_ptr,
        url_len,
        status_ptr,
        len_ptr,
    )
}

fn http_try_get<E: HttpEnv>(
    fenv: FunctionEnvMut<'_, E>,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> Result<i32, HostStop> {
    get(fenv, Pair::Twin, url_ptr, url_len, status_ptr, len_ptr)
}

fn get<E: HttpEnv>(
    mut fenv: FunctionEnvMut<'_, E>,
    pair: Pair,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> Result<i32, HostStop> {
    guarded(&mut fenv, |call, view, deadline| {
        http_import::check_url_len(url_len)?;
        let mut url = vec![0u8; url_len as usize];
        view.read(u64::from(url_ptr), &mut url)
            .map_err(|_| HttpImportFault::UrlOutOfBounds)?;
        let url = http_import::url_text(&url);
        let fetched = match call.getter {
            Some(getter) => call
                .cpu
                .released_while(deadline, || getter.get_blocking(&url, deadline)),
            None => http_import::without_grant(pair)?,
        };
        let reply = call.held.hold(fetched)?;
        for (at, value) in [(status_ptr, reply.status), (len_ptr, reply.body_len)] {
            view.write(u64::from(at), &value.to_le_bytes())
                .map_err(|_| HttpImportFault::ReplyOutOfBounds)?;
        }
        Ok(reply.result)
    })
}

fn http_read<E: HttpEnv>(
    mut fenv: FunctionEnvMut<'_, E>,
    buf_ptr: u32,
    buf_len: u32,
) -> Result<i32, HostStop> {
    guarded(&mut fenv, |call, view, _| {
        let chunk = call.held.next_chunk(buf_len);
        view.write(u64::from(buf_ptr), chunk)
            .map_err(|_| HttpImportFault::BufferOutOfBounds)?;
        let written = chunk.len();
        Ok(call.held.consume(written))
    })
}

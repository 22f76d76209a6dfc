//! The `openwhisk::http_get` / `openwhisk::http_read` imports for wasmer: marshalling between
//! guest memory and the shared [`wasm_executor::net::HttpGetter`]. Linked only for `net_access` actions.

use std::sync::Arc;

use wasmer::{Function, FunctionEnv, FunctionEnvMut, MemoryView, Store};

use super::host::{HostStop, RunEnv};
use wasm_executor::net::code;

/// Longest URL a guest may pass.
const MAX_URL_BYTES: u32 = 8192;

/// A response (or error text) waiting for the guest to read it.
#[derive(Default)]
pub struct HeldBody {
    bytes: Vec<u8>,
    read: usize,
}

/// Builds `openwhisk::<name>` for one store, or `None` for a name the module does not have.
pub fn function(store: &mut Store, env: &FunctionEnv<RunEnv>, name: &str) -> Option<Function> {
    match name {
        "http_get" => Some(Function::new_typed_with_env(store, env, http_get)),
        "http_read" => Some(Function::new_typed_with_env(store, env, http_read)),
        _ => None,
    }
}

fn fault(what: &str) -> HostStop {
    HostStop::Fault(format!("{what} out of bounds"))
}

/// Runs `body` between the deadline checks every host function makes (see `deadline.rs`).
fn guarded(
    fenv: &mut FunctionEnvMut<'_, RunEnv>,
    body: impl FnOnce(&mut RunEnv, &MemoryView<'_>) -> Result<i32, HostStop>,
) -> Result<i32, HostStop> {
    let clock = Arc::clone(&fenv.data().clock);
    clock.enter()?;
    let (data, store) = fenv.data_and_store_mut();
    let result = match data.memory.clone() {
        Some(memory) => body(data, &memory.view(&store)),
        None => Err(HostStop::Fault("the module exports no memory".into())),
    };
    clock.leave()?;
    result
}

fn http_get(
    mut fenv: FunctionEnvMut<'_, RunEnv>,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> Result<i32, HostStop> {
    guarded(&mut fenv, |data, view| {
        if url_len > MAX_URL_BYTES {
            return Err(HostStop::Fault(format!(
                "http_get: URL longer than {MAX_URL_BYTES} bytes"
            )));
        }
        let mut url = vec![0u8; url_len as usize];
        view.read(u64::from(url_ptr), &mut url)
            .map_err(|_| fault("http_get: URL"))?;
        let url = String::from_utf8_lossy(&url).into_owned();
        let getter = data
            .net
            .clone()
            .ok_or_else(|| HostStop::Fault("http_get without net_access".into()))?;
        let deadline = data.clock.deadline();
        let fetched = data
            .cpu
            .released_while(deadline, || getter.get_blocking(&url, deadline));
        let (result, status, bytes) = match fetched {
            Ok(response) => (code::OK, u32::from(response.status), response.body),
            Err(error) => (error.code(), 0, error.to_string().into_bytes()),
        };
        let len = u32::try_from(bytes.len())
            .map_err(|_| HostStop::Fault("http_get: body too large".into()))?;
        view.write(u64::from(status_ptr), &status.to_le_bytes())
            .map_err(|_| fault("http_get: status pointer"))?;
        view.write(u64::from(len_ptr), &len.to_le_bytes())
            .map_err(|_| fault("http_get: length pointer"))?;
        data.held = HeldBody { bytes, read: 0 };
        Ok(result)
    })
}

fn http_read(
    mut fenv: FunctionEnvMut<'_, RunEnv>,
    buf_ptr: u32,
    buf_len: u32,
) -> Result<i32, HostStop> {
    guarded(&mut fenv, |data, view| {
        let held = std::mem::take(&mut data.held);
        let chunk = (held.bytes.len() - held.read)
            .min(buf_len as usize)
            .min(i32::MAX as usize);
        view.write(
            u64::from(buf_ptr),
            &held.bytes[held.read..held.read + chunk],
        )
        .map_err(|_| fault("http_read: buffer"))?;
        let read = held.read + chunk;
        if read < held.bytes.len() {
            data.held = HeldBody {
                bytes: held.bytes,
                read,
            };
        }
        Ok(chunk as i32)
    })
}

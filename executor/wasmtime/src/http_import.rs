//! The `openwhisk::http_get` / `openwhisk::http_read` imports for wasmtime: marshalling between
//! guest memory and the shared [`wasm_executor::net::HttpGetter`], the guest suspended (without its CPU
//! slot) while the request is under way. Linked only for `net_access` actions.

use wasmtime::{Caller, Linker, Memory};
use wasmtime::{error::Context as _, format_err};

use super::RunState;
use wasm_executor::net::{IMPORT_MODULE, code};

/// Longest URL a guest may pass.
const MAX_URL_BYTES: u32 = 8192;

/// A response (or error text) waiting for the guest to read it.
#[derive(Default)]
pub struct HeldBody {
    bytes: Vec<u8>,
    read: usize,
}

pub fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap_async(
        IMPORT_MODULE,
        "http_get",
        |caller: Caller<'_, RunState>,
         (url_ptr, url_len, status_ptr, len_ptr): (u32, u32, u32, u32)| {
            Box::new(http_get(caller, url_ptr, url_len, status_ptr, len_ptr))
        },
    )?;
    linker.func_wrap(
        IMPORT_MODULE,
        "http_read",
        |mut caller: Caller<'_, RunState>, buf_ptr: u32, buf_len: u32| -> wasmtime::Result<i32> {
            let memory = guest_memory(&mut caller)?;
            let held = std::mem::take(&mut caller.data_mut().held);
            let chunk = (held.bytes.len() - held.read)
                .min(buf_len as usize)
                .min(i32::MAX as usize);
            memory
                .write(
                    &mut caller,
                    buf_ptr as usize,
                    &held.bytes[held.read..held.read + chunk],
                )
                .context("http_read: buffer out of bounds")?;
            let read = held.read + chunk;
            if read < held.bytes.len() {
                caller.data_mut().held = HeldBody {
                    bytes: held.bytes,
                    read,
                };
            }
            Ok(chunk as i32)
        },
    )?;
    Ok(())
}

async fn http_get(
    mut caller: Caller<'_, RunState>,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> wasmtime::Result<i32> {
    let memory = guest_memory(&mut caller)?;
    if url_len > MAX_URL_BYTES {
        return Err(format_err!(
            "http_get: URL longer than {MAX_URL_BYTES} bytes"
        ));
    }
    let mut url = vec![0u8; url_len as usize];
    memory
        .read(&caller, url_ptr as usize, &mut url)
        .context("http_get: URL out of bounds")?;
    let url = String::from_utf8_lossy(&url).into_owned();
    let state = caller.data_mut();
    let getter = state
        .net
        .clone()
        .ok_or_else(|| format_err!("http_get without net_access"))?;
    let deadline = state.deadline;
    let (result, status, bytes) = match state.off_cpu(getter.get(&url, deadline)).await {
        Ok(response) => (code::OK, u32::from(response.status), response.body),
        Err(error) => (error.code(), 0, error.to_string().into_bytes()),
    };
    let len = u32::try_from(bytes.len()).context("http_get: body too large")?;
    memory
        .write(&mut caller, status_ptr as usize, &status.to_le_bytes())
        .context("http_get: status pointer out of bounds")?;
    memory
        .write(&mut caller, len_ptr as usize, &len.to_le_bytes())
        .context("http_get: length pointer out of bounds")?;
    caller.data_mut().held = HeldBody { bytes, read: 0 };
    Ok(result)
}

fn guest_memory(caller: &mut Caller<'_, RunState>) -> wasmtime::Result<Memory> {
    caller
        .get_export("memory")
        .and_then(|e| e.into_memory())
        .ok_or_else(|| format_err!("the module exports no memory"))
}

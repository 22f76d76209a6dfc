//! The `openwhisk::http_get` / `openwhisk::http_read` imports for wasmtime: marshalling between
//! guest memory and the library's [`http_import`] (its policy and held body), the guest
//! suspended (without its CPU slot) while the request is under way. Linked only for
//! `net_access` actions; their twins `http_try_get`/`http_try_read` for every module.

use wasmtime::{Caller, Linker, Memory};

use super::RunState;
use wasm_executor::{
    backend::http_import::{self, HttpImportFault, Pair},
    net::IMPORT_MODULE,
};

/// Links one pair of the imports: the capability's (`http_get`, `http_read`) or its twins.
pub fn add_to_linker(linker: &mut Linker<RunState>, pair: Pair) -> wasmtime::Result<()> {
    let (get, read) = match pair {
        Pair::Capability => ("http_get", "http_read"),
        Pair::Twin => (http_import::TRY_GET, http_import::TRY_READ),
    };
    linker.func_wrap_async(
        IMPORT_MODULE,
        get,
        move |caller: Caller<'_, RunState>,
              (url_ptr, url_len, status_ptr, len_ptr): (u32, u32, u32, u32)| {
            Box::new(http_get(
                caller, pair, url_ptr, url_len, status_ptr, len_ptr,
            ))
        },
    )?;
    linker.func_wrap(
        IMPORT_MODULE,
        read,
        |mut caller: Caller<'_, RunState>, buf_ptr: u32, buf_len: u32| -> wasmtime::Result<i32> {
            let memory = guest_memory(&mut caller)?;
            let (memory_bytes, state) = memory.data_and_store_mut(&mut caller);
            let chunk = state.held.next_chunk(buf_len);
            memory_bytes
                .get_mut(buf_ptr as usize..)
                .and_then(|tail| tail.get_mut(..chunk.len()))
                .ok_or(HttpImportFault::BufferOutOfBounds)?
                .copy_from_slice(chunk);
            let written = chunk.len();
            Ok(state.held.consume(written))
        },
    )?;
    Ok(())
}

async fn http_get(
    mut caller: Caller<'_, RunState>,
    pair: Pair,
    url_ptr: u32,
    url_len: u32,
    status_ptr: u32,
    len_ptr: u32,
) -> wasmtime::Result<i32> {
    let memory = guest_memory(&mut caller)?;
    http_import::check_url_len(url_len)?;
    let mut url = vec![0u8; url_len as usize];
    memory
        .read(&caller, url_ptr as usize, &mut url)
        .map_err(|_| HttpImportFault::UrlOutOfBounds)?;
    let url = http_import::url_text(&url);
    let state = caller.data_mut();
    let fetched = match state.net.clone() {
        Some(getter) => {
            let deadline = state.deadline;
            state.off_cpu(getter.get(&url, deadline)).await
        }
        None => http_import::without_grant(pair)?,
    };
    let reply = caller.data_mut().held.hold(fetched)?;
    for (at, value) in [(status_ptr, reply.status), (len_ptr, reply.body_len)] {
        memory
            .write(&mut caller, at as usize, &value.to_le_bytes())
            .map_err(|_| HttpImportFault::ReplyOutOfBounds)?;
    }
    Ok(reply.result)
}

fn guest_memory(caller: &mut Caller<'_, RunState>) -> Result<Memory, HttpImportFault> {
    caller
        .get_export("memory")
        .and_then(|e| e.into_memory())
        .ok_or(HttpImportFault::NoMemory)
}

//! The JavaScript engine for nodejs actions: QuickJS-NG (through rquickjs) behind OpenWhisk's
//! nodejs action contract (`prelude.js`).
//!
//! The executor pre-initialises it once per action: it calls the export `wizer-initialize`
//! with the action's init document on stdin (`{"main", "env", "code"}` for source text,
//! `{"main", "env", "files"}` for a zip), which evaluates the code and finds `main`; the
//! instance's state is the action's snapshot, and every activation starts from it at `_start`
//! with the parameters as argv[1]. Activations print their result as the last stdout line
//! and exit 0 (200) or 1 (502, the line's `error`).
//!
//! Pre-initialisation must not touch the environment, the arguments or the preopened
//! directories: wasi-libc would read them once, then, and the snapshot would keep them.

use std::{
    cell::{Cell, RefCell},
    io::{Read, Write},
    time::Duration,
};

use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Object, Persistent, Promise, Runtime,
    Value, context::EvalOptions, function::Func, promise::PromiseState,
};

const PRELUDE: &str = include_str!("prelude.js");
/// The engine's own C stack in linear memory is 1 MiB (the Rust default); QuickJS stops
/// recursion well before it.
const MAX_STACK_BYTES: usize = 768 << 10;

/// What pre-initialisation leaves for the activations: the runtime, its context and the
/// prelude's functions (`run`, `nextTimer`, `fireTimers`).
struct Engine {
    _runtime: Runtime,
    context: Context,
    contract: Persistent<Object<'static>>,
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
    static RNG: Cell<u64> = const { Cell::new(0) };
}

fn write_line(fd: i32, text: String) {
    let written = if fd == 2 {
        writeln!(std::io::stderr().lock(), "{text}")
    } else {
        writeln!(std::io::stdout().lock(), "{text}")
    };
    drop(written);
}

fn eval_script<'js>(
    ctx: Ctx<'js>,
    source: String,
    filename: String,
) -> rquickjs::Result<Value<'js>> {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.filename = Some(filename);
    ctx.eval_with_options(source, options)
}

/// The text of a caught JavaScript error: its V8-style stack (`Name: message` and the frames).
fn describe<'js>(
    ctx: &Ctx<'js>,
    contract: Option<&Object<'js>>,
    caught: CaughtError<'js>,
) -> String {
    match caught {
        CaughtError::Exception(exception) => {
            let stack = contract
                .and_then(|c| c.get::<_, Function>("v8Stack").ok())
                .and_then(|v8_stack| v8_stack.call::<_, String>((exception.clone(),)).ok());
            stack.unwrap_or_else(|| exception.to_string())
        }
        CaughtError::Value(value) => ctx
            .json_stringify(value.clone())
            .ok()
            .flatten()
            .and_then(|s| s.to_string().ok())
            .unwrap_or_else(|| format!("uncaught {}", value.type_name())),
        CaughtError::Error(error) => error.to_string(),
    }
}

fn json_error(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Evaluates the prelude and the action's code from the init document.
fn initialize(document: &str) -> Result<Engine, String> {
    let runtime = Runtime::new().map_err(|e| e.to_string())?;
    runtime.set_max_stack_size(MAX_STACK_BYTES);
    let context = Context::full(&runtime).map_err(|e| e.to_string())?;
    let contract = context.with(|ctx| {
        let host = Object::new(ctx.clone()).and_then(|host| {
            host.set("write", Func::from(write_line))?;
            host.set("evalScript", Func::from(eval_script))?;
            host.set("httpGet", Func::from(http_get))?;
            Ok(host)
        });
        let prepared = host.and_then(|host| {
            let factory: Function = eval_script(ctx.clone(), PRELUDE.into(), "prelude.js".into())?
                .into_function()
                .ok_or_else(|| rquickjs::Error::new_from_js("value", "function"))?;
            let contract: Object = factory.call((host,))?;
            Ok(contract)
        });
        let contract = prepared.catch(&ctx).map_err(|e| describe(&ctx, None, e))?;
        let init: Function = contract.get("init").map_err(|e| e.to_string())?;
        let doc = ctx
            .json_parse(document)
            .catch(&ctx)
            .map_err(|e| describe(&ctx, None, e))?;
        init.call::<_, ()>((doc,))
            .catch(&ctx)
            .map_err(|e| describe(&ctx, Some(&contract), e))?;
        // Promise jobs queued by the code's top level settle now, into the snapshot.
        while ctx.execute_pending_job() {}
        Ok::<_, String>(Persistent::save(&ctx, contract))
    })?;
    Ok(Engine {
        _runtime: runtime,
        context,
        contract,
    })
}

/// Pre-initialisation: the init document on stdin; prints `{"ok":true}` or
/// `{"error": "Initialization has failed due to: …"}` as its last stdout line.
#[unsafe(export_name = "wizer-initialize")]
pub extern "C" fn wizer_initialize() {
    let mut document = String::new();
    let outcome = match std::io::stdin().read_to_string(&mut document) {
        Ok(_) => initialize(&document),
        Err(e) => Err(format!("cannot read the init document: {e}")),
    };
    match outcome {
        Ok(engine) => {
            ENGINE.with(|slot| *slot.borrow_mut() = Some(engine));
            write_line(1, "{\"ok\":true}".into());
        }
        Err(error) => {
            write_line(2, format!("Error during initialization: {error}"));
            write_line(
                1,
                json_error(&format!("Initialization has failed due to: {error}")),
            );
        }
    }
}

/// `fetch`'s GET: `{code, status, body}` with the executor's result code (0: a response, its
/// body as text; else the reason as `body`).
fn http_get<'js>(ctx: Ctx<'js>, url: String) -> rquickjs::Result<Object<'js>> {
    let (code, status, body) = executor_http::get(&url);
    let reply = Object::new(ctx)?;
    reply.set("code", code)?;
    reply.set("status", status)?;
    reply.set("body", String::from_utf8_lossy(&body).into_owned())?;
    Ok(reply)
}

/// The executor's HTTP imports: the twins every module may import, which answer "not
/// permitted" to an action without `net_access` (the engine serves actions with and without).
#[cfg(target_os = "wasi")]
mod executor_http {
    #[link(wasm_import_module = "openwhisk")]
    unsafe extern "C" {
        fn http_try_get(url: *const u8, url_len: usize, status: *mut u32, len: *mut u32) -> i32;
        fn http_try_read(buf: *mut u8, buf_len: usize) -> i32;
    }

    /// (result code, HTTP status, body or the reason of a failure).
    pub fn get(url: &str) -> (i32, u32, Vec<u8>) {
        let (mut status, mut len) = (0u32, 0u32);
        // SAFETY: the URL is readable for its length; both out-pointers are valid u32s.
        let code = unsafe { http_try_get(url.as_ptr(), url.len(), &mut status, &mut len) };
        let mut body = vec![0u8; len as usize];
        let mut filled = 0;
        while filled < body.len() {
            // SAFETY: the host writes at most the spare length into the buffer's tail.
            let read = unsafe { http_try_read(body[filled..].as_mut_ptr(), body.len() - filled) };
            match usize::try_from(read) {
                Ok(read) if read > 0 => filled += read,
                _ => break,
            }
        }
        body.truncate(filled);
        (code, status, body)
    }
}

/// Outside WebAssembly (`cargo check` on the host) there is no executor to ask.
#[cfg(not(target_os = "wasi"))]
mod executor_http {
    pub fn get(_url: &str) -> (i32, u32, Vec<u8>) {
        (2, 0, b"no executor outside WebAssembly".to_vec())
    }
}

#[cfg(target_os = "wasi")]
#[link(wasm_import_module = "wasi_snapshot_preview1")]
unsafe extern "C" {
    #[link_name = "random_get"]
    fn wasi_random_get(buf: *mut u8, len: usize) -> u16;
}

/// Math.random from a generator seeded per activation: QuickJS seeds its own when the context
/// is created, i.e. into the snapshot, and every activation would draw the same numbers.
fn random() -> f64 {
    RNG.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    })
}

#[cfg(target_os = "wasi")]
fn seed_random() {
    let mut seed = [0u8; 8];
    // SAFETY: the buffer is 8 writable bytes.
    let errno = unsafe { wasi_random_get(seed.as_mut_ptr(), seed.len()) };
    let seed = if errno == 0 {
        u64::from_le_bytes(seed)
    } else {
        0x9E37_79B9_7F4A_7C15
    };
    RNG.with(|state| state.set(seed | 1));
}

/// Outside WebAssembly (`cargo check` on the host) the clock seeds it.
#[cfg(not(target_os = "wasi"))]
fn seed_random() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    RNG.with(|state| state.set(nanos | 1));
}

/// Runs `main` with the parameters, drives its promise (jobs, then timers) and returns
/// (exit status, result line).
fn activate(engine: &Engine, params: &str) -> (i32, String) {
    engine.context.with(|ctx| {
        let contract = match engine.contract.clone().restore(&ctx) {
            Ok(contract) => contract,
            Err(e) => return (1, json_error(&e.to_string())),
        };
        let started = (|| {
            let math: Object = ctx.globals().get("Math")?;
            math.set("random", Func::from(random))?;
            let env = Object::new(ctx.clone())?;
            for (name, value) in std::env::vars() {
                env.set(name, value)?;
            }
            let run: Function = contract.get("run")?;
            run.call::<_, Promise>((params, env))
        })()
        .catch(&ctx);
        let promise = match started {
            Ok(promise) => promise,
            Err(e) => return (1, json_error(&describe(&ctx, Some(&contract), e))),
        };
        loop {
            while ctx.execute_pending_job() {}
            if promise.state() != PromiseState::Pending {
                break;
            }
            let timers = (|| {
                let next: f64 = contract.get::<_, Function>("nextTimer")?.call(())?;
                if next < 0.0 {
                    return Ok(false);
                }
                std::thread::sleep(Duration::from_millis(next as u64));
                contract.get::<_, Function>("fireTimers")?.call::<_, ()>(())?;
                Ok(true)
            })()
            .catch(&ctx);
            match timers {
                Ok(true) => {}
                Ok(false) => {
                    return (
                        1,
                        json_error(
                            "The action's Promise never settles: nothing is left that could settle it (no timer is set)",
                        ),
                    );
                }
                Err(e) => {
                    let error = describe(&ctx, Some(&contract), e);
                    write_line(2, error.clone());
                    return (1, json_error(&format!("An error has occurred: {error}")));
                }
            }
        }
        let outcome = promise.result::<Object>().map(|settled| {
            settled.and_then(|o| Ok((o.get::<_, i32>("status")?, o.get::<_, String>("line")?)))
        });
        match outcome {
            Some(Ok(outcome)) => outcome,
            Some(Err(e)) => (1, json_error(&e.to_string())),
            None => (1, json_error("The action's Promise did not settle")),
        }
    })
}

fn main() {
    let params = match std::env::args().nth(1) {
        Some(params) if !params.trim().is_empty() => params,
        _ => {
            let mut params = String::new();
            let _ = std::io::stdin().read_to_string(&mut params);
            if params.trim().is_empty() {
                "{}".into()
            } else {
                params
            }
        }
    };
    seed_random();
    let (status, line) = ENGINE.with(|slot| match slot.borrow().as_ref() {
        Some(engine) => activate(engine, &params),
        None => (
            1,
            json_error(
                "this module is the executor's JavaScript engine: create nodejs actions from \
                 JavaScript source (kind nodejs), not from the engine itself",
            ),
        ),
    });
    write_line(1, line);
    let _ = std::io::stdout().flush();
    // A successful activation returns from `_start`: `proc_exit` would end it as a trap, whose
    // backtrace the host records.
    if status != 0 {
        std::process::exit(status);
    }
}

//! `hostile`: does what a tenant trying to escape or exhaust the executor would, one attack per
//! call, and reports what happened, so the conformance suite can check that the sandbox held.
//!
//! - `{"fs": [op, …]}` runs file operations in order and reports each: `{"op": "read", "path"}`,
//!   `{"op": "write", "path", "content"}`, `{"op": "list", "path"}`, `{"op": "mkdir", "path"}`,
//!   `{"op": "link", "from", "to"}` (hard link), `{"op": "rename", "from", "to"}`,
//!   `{"op": "symlink", "target", "path"}`, `{"op": "remove", "path"}` (a file)
//!   → `{"fs": [{"ok": …} | {"errno": n, "error": "…"}, …]}`
//! - `{"print": [[stream, text], …]}` writes each text to `stdout` or `stderr` as a write of
//!   its own (flushed), so a line can be split across writes; then the result
//! - `{"iovec_flood": {"count": N, "bytes": B}}` writes to stdout once with N iovecs, each the
//!   same B bytes without a newline, again until the write fails; reports the first write's count
//! - `{"fill": {"dir": D, "files": N, "bytes": B}}` writes up to N files of B bytes each in D
//!   (64 KiB at a time) until a write fails; reports the files made, the bytes written and the
//!   failure's errno
//! - `{"random_bytes": N}` asks WASI `random_get` for N bytes in one call
//! - `{"open_files": {"dir": D, "count": N}}` creates and holds open up to N files in D, until
//!   an open fails; reports how many were open and the failure's errno
//! - `{"sleep_ms": N}` sleeps in WASI (`poll_oneoff`), not spinning
//! - `{"log_lines": N, "line_bytes": B}` prints N lines of B bytes on stderr, then the result
//! - `{"result_bytes": N}` returns a result holding a string of N bytes
//! - `{"recurse": N}` recurses N frames deep (each holds a 1 KiB buffer)
//! - `{"residue": true}` probes what earlier activations left in memory: counts the bytes of a
//!   zero-initialised buffer that are not zero and of a buffer initialised by the module's data
//!   that differ from it, then overwrites both; then grows the memory by `grown_bytes` and does
//!   the same with the new pages, which must be zero → `{"residue": {"bytes", "zeroed_dirty",
//!   "initialized_dirty", "grown_bytes", "grown_dirty"}}`; a fresh instance reports 0, 0 and 0

use std::{
    fs,
    hint::black_box,
    io::{IoSlice, Write},
    sync::atomic::{AtomicU8, Ordering},
    time::Duration,
};

use openwhisk::serde_json::Map;
use openwhisk::{Error, Value, error, json, params};

/// One file operation's outcome.
fn outcome(result: std::io::Result<Value>) -> Value {
    match result {
        Ok(value) => json!({ "ok": value }),
        Err(e) => json!({ "errno": e.raw_os_error(), "error": e.to_string() }),
    }
}

fn fs_op(op: &Value) -> Result<Value, Error> {
    let text = |key: &str| params::str_or(op, key, "");
    let result = match text("op")? {
        "read" => fs::read(text("path")?).map(|b| json!(String::from_utf8_lossy(&b))),
        "write" => fs::write(text("path")?, text("content")?).map(|()| json!(true)),
        "mkdir" => fs::create_dir(text("path")?).map(|()| json!(true)),
        "list" => fs::read_dir(text("path")?).and_then(|entries| {
            let mut names = Vec::new();
            for entry in entries {
                names.push(entry?.file_name().to_string_lossy().into_owned());
            }
            names.sort();
            Ok(json!(names))
        }),
        "link" => fs::hard_link(text("from")?, text("to")?).map(|()| json!(true)),
        "rename" => fs::rename(text("from")?, text("to")?).map(|()| json!(true)),
        "remove" => fs::remove_file(text("path")?).map(|()| json!(true)),
        // `std::os::wasi::fs::symlink_path` is unstable; this is the same call.
        #[allow(deprecated)]
        "symlink" => fs::soft_link(text("target")?, text("path")?).map(|()| json!(true)),
        other => return Err(error!("unknown file operation {other:?}")),
    };
    Ok(outcome(result))
}

/// Writes files into a directory until told to stop or the filesystem refuses.
fn fill_dir(fill: &Value) -> Result<Value, Error> {
    let dir = params::str_or(fill, "dir", "/")?;
    let files = params::u64_or(fill, "files", 1)?;
    let bytes = params::u64_or(fill, "bytes", 0)?;
    let chunk = vec![b'f'; 64 << 10];
    let (mut made, mut written) = (0u64, 0u64);
    let mut write_one = |i: u64| -> std::io::Result<()> {
        let mut file = fs::File::create(format!("{dir}/fill-{i}"))?;
        made += 1;
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            file.write_all(&chunk[..n])?;
            written += n as u64;
            left -= n as u64;
        }
        file.sync_all()
    };
    let failure = (0..files).find_map(|i| write_one(i).err());
    Ok(json!({
        "files": made,
        "bytes": written,
        "errno": failure.as_ref().and_then(std::io::Error::raw_os_error),
    }))
}

/// Recurses `depth` frames, each with a buffer the optimizer cannot drop.
/// Bytes of each buffer the `residue` probe reads: more than the executor resets in place by
/// default (`--keep-resident-kib 128`), so both ways of resetting memory are probed.
const RESIDUE_BYTES: usize = 192 * 1024;
/// What the module's data gives `INITIALIZED`.
const INITIAL: u8 = 0x5a;
/// What the probe leaves in both buffers.
const WRITTEN: u8 = 0xa5;
static ZEROED: [AtomicU8; RESIDUE_BYTES] = [const { AtomicU8::new(0) }; RESIDUE_BYTES];
static INITIALIZED: [AtomicU8; RESIDUE_BYTES] = [const { AtomicU8::new(INITIAL) }; RESIDUE_BYTES];

/// Wasm pages the `residue` probe grows the memory by: 2 MiB, more than any backend resets in
/// place (wasmer's and WAMR's kept memories 1 MiB), so grown pages given back to the kernel are
/// probed too.
const GROWN_PAGES: usize = 32;
const WASM_PAGE_BYTES: usize = 64 * 1024;

/// Grows the memory by [`GROWN_PAGES`] behind the allocator's back, counts the new bytes that are
/// not zero, then overwrites them all (the allocator's own later growth lies beyond them).
#[cfg(target_arch = "wasm32")]
fn probe_grown() -> Result<usize, Error> {
    let first_page = core::arch::wasm32::memory_grow(0, GROWN_PAGES);
    if first_page == usize::MAX {
        return Err(error!("the memory did not grow by {GROWN_PAGES} pages"));
    }
    let start = (first_page * WASM_PAGE_BYTES) as *mut u8;
    let dirty = (0..GROWN_PAGES * WASM_PAGE_BYTES)
        .map(|at| {
            // SAFETY: the pages were just added to the memory and nothing else refers to them.
            unsafe {
                let byte = start.add(at);
                let was = byte.read_volatile();
                byte.write_volatile(WRITTEN);
                usize::from(was != 0)
            }
        })
        .sum();
    Ok(dirty)
}

/// Off Wasm there is no linear memory to grow: nothing to probe.
#[cfg(not(target_arch = "wasm32"))]
fn probe_grown() -> Result<usize, Error> {
    Ok(0)
}

/// Counts the bytes of `buffer` that are not `expected`, then overwrites them all.
fn probe(buffer: &[AtomicU8], expected: u8) -> usize {
    buffer
        .iter()
        .map(|byte| usize::from(byte.swap(WRITTEN, Ordering::Relaxed) != expected))
        .sum()
}

fn recurse(depth: u64) -> u64 {
    let buffer = black_box([depth as u8; 1024]);
    if depth == 0 {
        return u64::from(buffer[0]);
    }
    recurse(depth - 1).wrapping_add(u64::from(black_box(buffer)[1023]))
}

fn attack(p: Value) -> Result<Value, Error> {
    if let Some(ops) = p.get("fs").and_then(Value::as_array) {
        let results: Result<Vec<Value>, Error> = ops.iter().map(fs_op).collect();
        return Ok(json!({ "fs": results? }));
    }
    if let Some(ms) = p.get("sleep_ms").and_then(Value::as_u64) {
        std::thread::sleep(Duration::from_millis(ms));
        return Ok(json!({ "slept_ms": ms }));
    }
    if let Some(lines) = p.get("log_lines").and_then(Value::as_u64) {
        let line = "x".repeat(params::u64_or(&p, "line_bytes", 0)? as usize);
        let mut err = std::io::stderr().lock();
        for _ in 0..lines {
            // A guest that ignores write errors, as a flooding one would.
            let _ = writeln!(err, "{line}");
        }
        return Ok(json!({ "logged_lines": lines }));
    }
    if let Some(writes) = p.get("print").and_then(Value::as_array) {
        for write in writes {
            let (stream, text) = (&write[0], write[1].as_str().unwrap_or_default());
            if stream == "stdout" {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            } else {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
            }
        }
        return Ok(json!({ "printed": writes.len() }));
    }
    if let Some(flood) = p.get("iovec_flood") {
        let count = params::u64_or(flood, "count", 1)? as usize;
        let buffer = vec![b'x'; params::u64_or(flood, "bytes", 1)? as usize];
        let slices = vec![IoSlice::new(&buffer); count];
        let mut out = std::io::stdout().lock();
        let first = out.write_vectored(&slices);
        while out.write_vectored(&slices).is_ok() {}
        return Ok(match first {
            Ok(n) => json!({ "written": n }),
            Err(e) => json!({ "errno": e.raw_os_error(), "error": e.to_string() }),
        });
    }
    if let Some(open) = p.get("open_files") {
        let dir = params::str_or(open, "dir", "/")?;
        let count = params::u64_or(open, "count", 1)?;
        let mut held = Vec::new();
        for i in 0..count {
            match fs::File::create(format!("{dir}/open-{i}")) {
                Ok(file) => held.push(file),
                Err(e) => {
                    return Ok(json!({ "opened": held.len(), "errno": e.raw_os_error() }));
                }
            }
        }
        return Ok(json!({ "opened": held.len() }));
    }
    if let Some(fill) = p.get("fill") {
        return fill_dir(fill);
    }
    if let Some(bytes) = p.get("random_bytes").and_then(Value::as_u64) {
        let mut buffer = vec![0u8; bytes as usize];
        openwhisk::random::fill(&mut buffer)?;
        return Ok(json!({ "random_bytes": bytes }));
    }
    if let Some(bytes) = p.get("result_bytes").and_then(Value::as_u64) {
        return Ok(json!({ "big": "r".repeat(bytes as usize) }));
    }
    if let Some(depth) = p.get("recurse").and_then(Value::as_u64) {
        return Ok(json!({ "depth": depth, "sum": recurse(depth) }));
    }
    if p.get("residue").is_some() {
        return Ok(json!({ "residue": {
            "bytes": RESIDUE_BYTES,
            "zeroed_dirty": probe(&ZEROED, 0),
            "initialized_dirty": probe(&INITIALIZED, INITIAL),
            "grown_bytes": GROWN_PAGES * WASM_PAGE_BYTES,
            "grown_dirty": probe_grown()?,
        }}));
    }
    Ok(Value::Object(Map::new()))
}

openwhisk::main!(attack);

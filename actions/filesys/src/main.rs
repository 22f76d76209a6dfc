//! `filesys`: exercises the `dir` capability (a preopened host directory).
//!
//! `{"dir": "/tmp/wasm-cache", "file": "name.txt", "content": "…"}` writes the file, reads it
//! back and lists the directory → `{"path": …, "written": bytes, "read": …, "entries": […]}`.
//! `{"read_path": P}` tries to read any path → `{"read": …}` or `{"read_error": …,
//! "read_errno": n}`, and `{"write_path": P, "content": …}` tries to write one →
//! `{"written": …}` or `{"write_error": …, "write_errno": n}` (the WASI errno, `null` when the
//! error is not the system's, e.g. no preopened directory covers the path): the conformance
//! suite uses these to prove confinement.

use openwhisk::serde_json::Map;
use openwhisk::{Error, Value, error, json, params};
use std::fs;
use std::path::Path;

const DEFAULT_DIR: &str = "/tmp/wasm-cache";
const DEFAULT_FILE: &str = "hello.txt";
const DEFAULT_CONTENT: &str = "hello from an OpenWhisk Wasm action";

fn probe(p: &Value, read_path: Option<&str>, write_path: Option<&str>) -> Result<Value, Error> {
    let mut out = Map::new();
    if let Some(path) = read_path {
        match fs::read(path) {
            Ok(bytes) => {
                out.insert("read".into(), json!(String::from_utf8_lossy(&bytes)));
            }
            Err(e) => report(&mut out, "read", &e),
        }
    }
    if let Some(path) = write_path {
        let content = params::str_or(p, "content", DEFAULT_CONTENT)?;
        match fs::write(path, content) {
            Ok(()) => {
                out.insert("written".into(), json!(content.len()));
            }
            Err(e) => report(&mut out, "write", &e),
        }
    }
    Ok(Value::Object(out))
}

/// `<what>_error` (the message) and `<what>_errno` (the OS error number, or null).
fn report(out: &mut Map<String, Value>, what: &str, e: &std::io::Error) {
    out.insert(format!("{what}_error"), json!(e.to_string()));
    out.insert(format!("{what}_errno"), json!(e.raw_os_error()));
}

fn filesys(p: Value) -> Result<Value, Error> {
    let read_path = params::opt_str(&p, "read_path")?;
    let write_path = params::opt_str(&p, "write_path")?;
    if read_path.is_some() || write_path.is_some() {
        return probe(&p, read_path, write_path);
    }

    let dir = Path::new(params::str_or(&p, "dir", DEFAULT_DIR)?);
    let file = params::str_or(&p, "file", DEFAULT_FILE)?;
    let content = params::str_or(&p, "content", DEFAULT_CONTENT)?;
    let path = dir.join(file);

    // A no-op on the preopened directory itself; creates it when run natively.
    fs::create_dir_all(dir).map_err(|e| error!("cannot create {}: {e}", dir.display()))?;
    fs::write(&path, content).map_err(|e| error!("cannot write {}: {e}", path.display()))?;
    let read = fs::read(&path).map_err(|e| error!("cannot read {}: {e}", path.display()))?;
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| error!("cannot list {}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| error!("cannot list {}: {e}", dir.display()))?;
        entries.push(entry.file_name().to_string_lossy().into_owned());
    }
    entries.sort();
    Ok(json!({
        "path": path.to_string_lossy(),
        "written": content.len(),
        "read": String::from_utf8_lossy(&read),
        "entries": entries,
    }))
}

openwhisk::main!(filesys);

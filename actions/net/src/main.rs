//! `net`: I/O-bound HTTP GET through the SDK (`openwhisk.http_get` import in a module).
//!
//! `{"url": "http://127.0.0.1:8080/"}` → `{"status": 200, "bytes": n, "body": "<first KiB>"}`.
//! The module needs the `net_access` annotation; errors become `{"error": …}`.

use openwhisk::{Error, Value, json, params};

const DEFAULT_URL: &str = "http://127.0.0.1:8080/";
const PREVIEW: usize = 1024;

fn net(p: Value) -> Result<Value, Error> {
    let url = params::str_or(&p, "url", DEFAULT_URL)?;
    let response = openwhisk::http::get(url)?;
    let preview = &response.body[..response.body.len().min(PREVIEW)];
    Ok(json!({
        "status": response.status,
        "bytes": response.body.len(),
        "body": String::from_utf8_lossy(preview),
    }))
}

openwhisk::main!(net);

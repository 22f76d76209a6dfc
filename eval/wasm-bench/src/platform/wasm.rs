//! The wasm-executor as a platform: one executor process (started here) per platform, one
//! executor container per action container; each action's module is precompiled once for the
//! executor's runtime into a signed zip, and /init sends it as OpenWhisk would.

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::{Context, bail};
use serde_json::Value;

use super::{ACTION_TIMEOUT, Action, Container, Platform, RunEndpoint, RunResult};
use crate::{
    executor::{ExecutorOptions, ExecutorProcess, fresh_dir},
    http::{Client, ConnMode},
    metrics::{Histogram, Phase},
    precompile, workload,
};

/// What to start and which modules to prepare.
#[derive(Debug, Clone)]
pub struct WasmOptions {
    /// Name in records: the runtime (`wasmtime`, `wasmer`, `wamr`), or a variant of it.
    pub name: String,
    pub runtime: String,
    pub executor: PathBuf,
    pub precompiler: PathBuf,
    /// Directory of the portable modules (`<module>.wasm`; variants under `variants/`).
    pub actions: PathBuf,
    pub modules: Vec<String>,
    pub scratch: PathBuf,
    /// Extra executor flags (e.g. `--guest-execution async`).
    pub extra_args: Vec<String>,
}

pub struct WasmPlatform {
    name: String,
    process: ExecutorProcess,
    /// The /init body of each module: its signed precompiled zip, base64 in JSON.
    init_bodies: HashMap<String, Vec<u8>>,
    actions: PathBuf,
    next_id: AtomicU64,
}

impl WasmPlatform {
    pub fn start(options: &WasmOptions) -> anyhow::Result<WasmPlatform> {
        let dir = fresh_dir(&options.scratch, &options.name)?;
        let mut init_bodies = HashMap::new();
        // The delay server of the I/O-bound experiments listens on loopback.
        let mut args = vec!["--net-allow".to_owned(), "127.0.0.1".to_owned()];
        // Every build with its default threads and slots (a waiting guest holds no slot; in
        // the pool builds it holds one of 256 threads), and a deeper queue for the bursts of
        // the saturation experiments.
        args.extend(["--queue-depth", "1024"].map(str::to_owned));
        for module in &options.modules {
            let wasm = module_path(&options.actions, module);
            let module_dir = fresh_dir(&dir, &format!("artifact-{module}"))?;
            tracing::info!(platform = %options.name, %module, "precompiling");
            let artifact =
                precompile::signed_zip(&options.precompiler, &options.runtime, &wasm, &module_dir)
                    .with_context(|| format!("precompiling {}", wasm.display()))?;
            args.push("--trusted-key".to_owned());
            args.push(artifact.public_key.display().to_string());
            let zip = workload::read(&artifact.zip)?;
            init_bodies.insert(module.clone(), init_body(module, &zip));
        }
        args.extend(options.extra_args.iter().cloned());
        let process = ExecutorProcess::start(&ExecutorOptions {
            binary: options.executor.clone(),
            state_dir: fresh_dir(&dir, "cache")?,
            trusted_key: None,
            log_filter: "warn".to_owned(),
            log_path: dir.join("executor.log"),
            extra_args: args,
        })?;
        let health = Client::new(process.addr, ConnMode::New).get("/health")?;
        let info: Value = serde_json::from_slice(&health.body).context("parsing /health")?;
        if info["runtime"] != options.runtime.as_str() {
            bail!(
                "{} runs {}, not {}",
                options.executor.display(),
                info["runtime"],
                options.runtime
            );
        }
        Ok(WasmPlatform {
            name: options.name.clone(),
            process,
            init_bodies,
            actions: options.actions.clone(),
            next_id: AtomicU64::new(0),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    pub fn addr(&self) -> SocketAddr {
        self.process.addr
    }

    /// The /init body of a prepared module: its signed precompiled zip.
    pub fn precompiled_init_body(&self, module: &str) -> Option<&[u8]> {
        self.init_bodies.get(module).map(Vec::as_slice)
    }

    /// The /init body of `module` as portable Wasm, which the executor compiles (or takes from
    /// its on-disk cache).
    pub fn portable_init_body(&self, module: &str) -> anyhow::Result<Vec<u8>> {
        let wasm = workload::read(&module_path(&self.actions, module))?;
        Ok(init_body(module, &wasm))
    }
}

/// `hash` → `actions/hash.wasm`; `hash.lto` → `actions/variants/hash.lto.wasm`.
pub fn module_path(actions: &Path, module: &str) -> PathBuf {
    if module.contains('.') {
        actions.join("variants").join(format!("{module}.wasm"))
    } else {
        actions.join(format!("{module}.wasm"))
    }
}

/// The /init body of a precompiled zip (or portable module), with the limits OpenWhisk sends
/// by default; `net` carries the `net_access` annotation its HTTP calls need.
fn init_body(module: &str, zip: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let code = base64::engine::general_purpose::STANDARD.encode(zip);
    let body = serde_json::json!({"value": {
        "name": "eval", "main": "main", "binary": true, "code": code,
        "limits": {"memory": 256, "timeout": ACTION_TIMEOUT.as_millis() as u64},
        "annotations": {"net_access": module == "net"},
    }});
    serde_json::to_vec(&body).expect("JSON values serialize")
}

impl Platform for WasmPlatform {
    fn name(&self) -> &str {
        &self.name
    }

    fn create(&self, action: &Action) -> anyhow::Result<Box<dyn Container>> {
        let body = self
            .init_bodies
            .get(&action.module)
            .with_context(|| format!("module {} was not prepared", action.module))?;
        let id = format!(
            "{}-{}",
            sanitize(&action.name),
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let response =
            Client::new(self.process.addr, ConnMode::New).post(&format!("/{id}/init"), body)?;
        if response.status != 200 {
            bail!(
                "/init of {id} answered {}: {}",
                response.status,
                response.text()
            );
        }
        Ok(Box::new(WasmContainer {
            endpoint: RunEndpoint {
                addr: self.process.addr,
                path: format!("/{id}/run"),
                action: action.name.clone(),
            },
            destroy_path: format!("/{id}/destroy"),
        }))
    }

    fn host_address(&self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    }

    fn own_memory(&self) -> Option<u64> {
        self.pid().and_then(crate::rss::rss_bytes)
    }

    fn own_cpu_ns(&self) -> Option<u64> {
        self.pid().map(crate::cpu::process_cpu_ns)
    }

    fn executor_histogram(&self, phase: Phase) -> Option<Histogram> {
        let mut client = Client::new(self.process.addr, ConnMode::New);
        Histogram::scrape(&mut client, phase)
            .inspect_err(|error| tracing::warn!(platform = %self.name, %error, "scraping /metrics"))
            .ok()
    }
}

/// Container ids may hold letters, digits, `-` and `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

struct WasmContainer {
    endpoint: RunEndpoint,
    destroy_path: String,
}

impl Container for WasmContainer {
    fn run(&self, params: &Value) -> anyhow::Result<RunResult> {
        self.endpoint.run(params)
    }

    fn endpoint(&self) -> Option<&RunEndpoint> {
        Some(&self.endpoint)
    }

    fn remove(self: Box<Self>) -> anyhow::Result<()> {
        let response =
            Client::new(self.endpoint.addr, ConnMode::New).post(&self.destroy_path, b"")?;
        if response.status != 200 {
            bail!("{} answered {}", self.destroy_path, response.status);
        }
        Ok(())
    }
}

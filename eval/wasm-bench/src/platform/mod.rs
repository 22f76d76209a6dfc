//! Where an action runs in the evaluation: the wasm-executor (one of its runtime builds), a
//! Docker action container driven the way OpenWhisk's Docker factory drives it, or the native
//! binary started bare. One interface so every experiment runs unchanged on each of them.

pub mod docker;
pub mod native;
pub mod wasm;

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use serde_json::Value;

use crate::http::{self, Client, ConnMode};

/// An action as the platform knows it: a unique name (its own containers), the build of the
/// action it runs, and the parameters bound to it at creation (merged under each call's).
#[derive(Debug, Clone)]
pub struct Action {
    pub name: String,
    /// The action's build: `hash`, `net`, `echo`, or a variant such as `hash.lto`.
    pub module: String,
    pub bound: Value,
}

impl Action {
    pub fn new(name: impl Into<String>, module: impl Into<String>, bound: Value) -> Action {
        Action {
            name: name.into(),
            module: module.into(),
            bound,
        }
    }

    /// The parameters of one call: the bound ones, overridden by `params`.
    pub fn params(&self, params: &Value) -> Value {
        let mut merged = self.bound.clone();
        if let (Some(merged), Some(params)) = (merged.as_object_mut(), params.as_object()) {
            for (key, value) in params {
                merged.insert(key.clone(), value.clone());
            }
        }
        merged
    }
}

/// The answer of one activation.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// HTTP status of the container's answer (0: no answer).
    pub status: u16,
    pub body: Vec<u8>,
}

impl RunResult {
    pub fn ok(&self) -> bool {
        self.status == 200
    }
}

impl From<http::Response> for RunResult {
    fn from(response: http::Response) -> RunResult {
        RunResult {
            status: response.status,
            body: response.body,
        }
    }
}

/// Where a container reached over HTTP takes its activations: OpenWhisk's /run body, posted on
/// a new connection as the invoker posts it to a Docker action container (unless the caller
/// brings a client of its own).
#[derive(Debug, Clone)]
pub struct RunEndpoint {
    pub addr: SocketAddr,
    pub path: String,
    /// The action's name, in the body's metadata.
    pub action: String,
}

impl RunEndpoint {
    /// One activation, waited for on this thread.
    pub fn run(&self, params: &Value) -> anyhow::Result<RunResult> {
        self.run_with(&mut Client::new(self.addr, ConnMode::New), params)
    }

    /// One activation through `client`, on its connection when it keeps one alive.
    pub fn run_with(&self, client: &mut Client, params: &Value) -> anyhow::Result<RunResult> {
        let body = run_body(&self.action, params, ACTION_TIMEOUT);
        Ok(client.post(&self.path, &body)?.into())
    }

    /// One activation, awaited without holding a thread.
    pub async fn run_async(&self, params: &Value) -> anyhow::Result<RunResult> {
        let body = run_body(&self.action, params, ACTION_TIMEOUT);
        Ok(http::post_async(self.addr, &self.path, &body).await?.into())
    }
}

/// A platform creates ready containers for actions.
pub trait Platform: Send + Sync {
    /// Short name used in records and plots: `wasmtime`, `wasmer`, `wamr`, `docker`, `native`.
    fn name(&self) -> &str;
    /// Creates and initializes a container for `action`: when this returns, /run can be sent.
    fn create(&self, action: &Action) -> anyhow::Result<Box<dyn Container>>;
    /// How an action inside a container reaches a server on this host.
    fn host_address(&self) -> IpAddr;
    /// Whether idle containers are suspended (Docker's pause) and resumed before a run.
    fn suspends(&self) -> bool {
        false
    }
    /// Memory the platform uses for its own processes (bytes), e.g. the executor's RSS.
    fn own_memory(&self) -> Option<u64> {
        None
    }
    /// CPU time its own processes have used so far (ns): the executor; Docker's engine; the
    /// native platform's finished action processes.
    fn own_cpu_ns(&self) -> Option<u64> {
        None
    }
    /// The executor's own /init or /run duration histogram (executor builds only).
    fn executor_histogram(
        &self,
        _phase: crate::metrics::Phase,
    ) -> Option<crate::metrics::Histogram> {
        None
    }
}

/// One initialized container of one action; activations may run on it concurrently.
pub trait Container: Send + Sync {
    fn run(&self, params: &Value) -> anyhow::Result<RunResult>;
    /// Where activations go, for a container reached over HTTP: an async caller sends them
    /// itself instead of blocking a thread in `run`.
    fn endpoint(&self) -> Option<&RunEndpoint> {
        None
    }
    fn suspend(&self) -> anyhow::Result<()> {
        Ok(())
    }
    fn resume(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Frees the container (destroy, `docker rm -f`).
    fn remove(self: Box<Self>) -> anyhow::Result<()>;
    /// Memory attributed to this container alone (bytes), when the platform can tell.
    fn memory(&self) -> Option<u64> {
        None
    }
    /// CPU time attributed to this container alone so far (ns), when the platform can tell.
    fn cpu_ns(&self) -> Option<u64> {
        None
    }
}

/// An activation on `container`: over its HTTP endpoint when it has one, without a thread;
/// otherwise `run` on a blocking thread.
pub async fn run_async(
    container: &Arc<Box<dyn Container>>,
    params: Value,
) -> anyhow::Result<RunResult> {
    if let Some(endpoint) = container.endpoint() {
        return endpoint.run_async(&params).await;
    }
    let container = Arc::clone(container);
    blocking(move || container.run(&params)).await
}

/// Platform work that blocks (the Docker CLI, a blocking /init, a native process), on tokio's
/// blocking threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| anyhow::anyhow!("platform work panicked: {error}"))?
}

/// The /run body OpenWhisk sends: the parameters under `value` plus activation metadata.
pub fn run_body(action: &str, params: &Value, timeout: Duration) -> Vec<u8> {
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        + timeout;
    let body = serde_json::json!({
        "value": params,
        "action_name": format!("/guest/{action}"),
        "action_version": "0.0.1",
        "activation_id": format!("{:032x}", rand::random::<u128>()),
        "namespace": "guest",
        "transaction_id": "eval",
        "deadline": deadline.as_millis().to_string(),
    });
    serde_json::to_vec(&body).expect("JSON values serialize")
}

/// Time limit of an evaluation activation (OpenWhisk's default action timeout).
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn call_parameters_override_bound_ones() {
        let action = Action::new("net~1", "net", json!({"url": "http://a/", "x": 1}));
        assert_eq!(
            action.params(&json!({"x": 2})),
            json!({"url": "http://a/", "x": 2})
        );
    }
}

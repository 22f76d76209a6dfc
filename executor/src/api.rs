//! The HTTP API the invoker talks to (docs/executor-api.md): routes, the gate every request
//! passes, body parsing; failures are answered as `error.rs` says. Every request's body is
//! read (or discarded) before its route answers, within a time set by its length, so a
//! kept-alive connection is never left with an unread body; an answer given before the body
//! was read closes the connection.

use std::{sync::Arc, time::Duration};

use axum::{
    Json, Router,
    body::{Body, Bytes},
    extract::{
        DefaultBodyLimit, Path, Request, State,
        rejection::{BytesRejection, PathRejection},
    },
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::{
    backend::Backend,
    error::ServiceError,
    guard::ApiGuard,
    outcome::RunResponse,
    protocol::{InitRequest, RunRequest},
    service::Executor,
};

type AppState<B> = Arc<Executor<B>>;

/// Carries the executor's instance id on every answer (see `GET /health`).
pub const INSTANCE_HEADER: &str = "wasm-executor-instance";

/// Largest body read and discarded on a route that takes none.
const DISCARDED_BODY_BYTES: usize = 64 << 10;

/// What every request passes before its route: the guard, the body budget, the body's reading.
pub struct Gate {
    pub guard: ApiGuard,
    /// Request-body bytes that may be held at once, in KiB permits.
    bodies: Arc<Semaphore>,
    /// All the permits there are.
    total_kib: u32,
    max_body_bytes: usize,
    /// How long a body may take: this, plus its length at the minimum rate.
    body_grace: Duration,
    /// Slowest rate (bytes per second) at which a body may arrive.
    body_min_rate: u64,
}

impl Gate {
    pub fn new(
        guard: ApiGuard,
        max_body_bytes: usize,
        max_pending_body_bytes: usize,
        body_grace: Duration,
        body_min_rate: u64,
    ) -> Self {
        let total_kib =
            u32::try_from(max_pending_body_bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        Gate {
            guard,
            bodies: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            max_body_bytes,
            body_grace,
            body_min_rate: body_min_rate.max(1),
        }
    }

    /// Reads the request's body within its time: in whole for /init and /run, discarded (up to
    /// [`DISCARDED_BODY_BYTES`]) for every other route. An answer instead when it could not be.
    async fn read_body(&self, request: Request) -> Result<Request, Response> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path();
        let kept =
            parts.method == Method::POST && (path.ends_with("/init") || path.ends_with("/run"));
        let limit = if kept {
            self.max_body_bytes
        } else {
            DISCARDED_BODY_BYTES
        };
        let too_large = || {
            closing(ServiceError::BodyTooLarge(format!(
                "the request body is larger than this route takes ({limit} bytes)"
            )))
        };
        let declared = declared_length(&parts.headers);
        if declared.is_some_and(|length| length > limit) {
            return Err(too_large());
        }
        let expected = declared.unwrap_or(limit) as u64;
        let allowed = self.body_grace + Duration::from_secs(expected / self.body_min_rate);
        match tokio::time::timeout(allowed, Limited::new(body, limit).collect()).await {
            Ok(Ok(collected)) => {
                let bytes = if kept {
                    collected.to_bytes()
                } else {
                    Bytes::new()
                };
                Ok(Request::from_parts(parts, Body::from(bytes)))
            }
            Ok(Err(error)) if error.is::<LengthLimitError>() => Err(too_large()),
            Ok(Err(error)) => Err(closing(ServiceError::BadRequest(format!(
                "the request body could not be read: {error}"
            )))),
            Err(_) => Err(closing(ServiceError::BodyTimedOut(format!(
                "the request body did not arrive within {} ms",
                allowed.as_millis()
            )))),
        }
    }

    /// The KiB a request's body may take, from its Content-Length (chunked: the largest body),
    /// never more than the whole budget.
    fn body_kib(&self, headers: &HeaderMap) -> u32 {
        let bytes = match declared_length(headers) {
            Some(length) => length.min(self.max_body_bytes),
            None if headers.contains_key(header::TRANSFER_ENCODING) => self.max_body_bytes,
            None => 0,
        };
        u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .min(self.total_kib)
    }
}

pub fn router<B: Backend>(executor: AppState<B>, gate: Gate) -> Router {
    let max_body_bytes = gate.max_body_bytes;
    // Made once, when the server starts; no request reaches this.
    let instance = HeaderValue::from_str(executor.instance())
        .expect("an instance id is hex, which is a valid header value");
    let answering = Arc::new(Answering {
        instance,
        executor: Arc::clone(&executor),
    });
    Router::new()
        .route("/health", get(health::<B>))
        .route("/metrics", get(metrics::<B>))
        .route("/containers", get(containers::<B>))
        .route("/{id}/init", post(init::<B>))
        .route("/{id}/run", post(run::<B>))
        .route("/{id}/destroy", post(destroy::<B>))
        .route("/{id}/logs", get(logs::<B>))
        .fallback(|| async { ServiceError::NotFound("no such route".into()) })
        .method_not_allowed_fallback(|| async {
            ServiceError::MethodNotAllowed("method not allowed on this route".into())
        })
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(middleware::from_fn_with_state(Arc::new(gate), gated))
        .layer(middleware::from_fn_with_state(answering, answered::<B>))
        .with_state(executor)
}

/// What every answer passes on its way out.
struct Answering<B: Backend> {
    instance: HeaderValue,
    executor: AppState<B>,
}

/// Stamps every answer with the executor's instance, and counts every 503 — whichever limit
/// turned the request away (pool, containers, request bodies) — as a rejection.
async fn answered<B: Backend>(
    State(answering): State<Arc<Answering<B>>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = next.run(request).await;
    if response.status() == StatusCode::SERVICE_UNAVAILABLE {
        answering.executor.metrics.rejected();
    }
    response
        .headers_mut()
        .insert(INSTANCE_HEADER, answering.instance.clone());
    response
}

/// The Content-Length a request declares.
fn declared_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
}

/// An answer given without reading the request's body: the connection ends with it, so the
/// client never writes its next request into a connection the server is closing.
fn closing(error: ServiceError) -> Response {
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Lets a request through to its route when [`ApiGuard`] accepts it, its body fits in what
/// may be held at once and arrives in time; the body's share is held until the answer is made.
async fn gated(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    if let Err(refusal) =
        gate.guard
            .check(request.method(), request.uri().path(), request.headers())
    {
        return closing(refusal);
    }
    let kib = gate.body_kib(request.headers());
    let _held = match kib {
        0 => None,
        kib => match Arc::clone(&gate.bodies).try_acquire_many_owned(kib) {
            Ok(held) => Some(held),
            Err(_) => {
                return closing(ServiceError::Overloaded(
                    "the executor holds as many request bodies as it may; retry elsewhere".into(),
                ));
            }
        },
    };
    match gate.read_body(request).await {
        Ok(request) => next.run(request).await,
        Err(answer) => answer,
    }
}

/// The container id of a request: one path segment of a restricted alphabet (a segment that
/// is not even UTF-8 gets the same answer).
fn container_id(path: Result<Path<String>, PathRejection>) -> Result<String, ServiceError> {
    let id = path.map(|Path(id)| id).unwrap_or_default();
    let ok = (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && id != "."
        && id != "..";
    if ok {
        Ok(id)
    } else {
        Err(ServiceError::BadRequest(
            "container ids are 1 to 128 characters of A-Z a-z 0-9 . _ - (not . or ..)".into(),
        ))
    }
}

/// The request's body, or the answer that it could not be read (too large, cut off).
fn received(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ServiceError> {
    body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ServiceError::BodyTooLarge(rejection.body_text()),
        _ => ServiceError::BadRequest(rejection.body_text()),
    })
}

fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ServiceError> {
    serde_json::from_slice(body)
        .map_err(|e| ServiceError::BadRequest(format!("invalid JSON body: {e}")))
}

async fn init<B: Backend>(
    State(executor): State<AppState<B>>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<serde_json::Value>, ServiceError> {
    let id = container_id(path)?;
    let body = received(body)?;
    let request: InitRequest = parse_json(&body)?;
    executor.init(&id, request, &body).await?;
    Ok(Json(json!({ "ok": true })))
}

async fn run<B: Backend>(
    State(executor): State<AppState<B>>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServiceError> {
    let id = container_id(path)?;
    let request: RunRequest = parse_json(&received(body)?)?;
    match executor.run(&id, request).await? {
        RunResponse::Result(raw) => Ok((
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            String::from(Box::<str>::from(raw)),
        )
            .into_response()),
        RunResponse::ActionError { message, outcome } => {
            Err(ServiceError::failed_run(outcome, message))
        }
    }
}

async fn destroy<B: Backend>(
    State(executor): State<AppState<B>>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<serde_json::Value>, ServiceError> {
    let id = container_id(path)?;
    executor.destroy(&id)?;
    Ok(Json(json!({ "ok": true })))
}

async fn logs<B: Backend>(
    State(executor): State<AppState<B>>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ServiceError> {
    let id = container_id(path)?;
    let lines = executor.logs(&id)?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], lines).into_response())
}

async fn containers<B: Backend>(State(executor): State<AppState<B>>) -> Json<serde_json::Value> {
    Json(json!({ "containers": executor.container_ids() }))
}

async fn health<B: Backend>(State(executor): State<AppState<B>>) -> Json<serde_json::Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "instance": executor.instance(),
        "runtime": executor.runtime_name(),
        "runtime_version": executor.runtime_version(),
        "target": executor.target(),
        "portable_modules": executor.portable_modules(),
        "guest_execution": executor.guest_execution(),
        "suspends_guests": executor.suspends_guests(),
    }))
}

async fn metrics<B: Backend>(State(executor): State<AppState<B>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        executor.render_metrics(),
    )
        .into_response()
}

//! The HTTP API the invoker talks to (docs/executor-api.md): routes, body parsing and the one
//! place where errors become status codes and `{"error": …}` bodies.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::Bytes,
    extract::{
        DefaultBodyLimit, Path, Request, State,
        rejection::{BytesRejection, PathRejection},
    },
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::{
    guard::{ApiGuard, Refusal},
    outcome::RunResponse,
    protocol::{InitRequest, RunRequest},
    service::{Executor, ServiceError},
};

type AppState = Arc<Executor>;

/// Carries the executor's instance id on every answer (see `GET /health`).
pub const INSTANCE_HEADER: &str = "wasm-executor-instance";

/// What every request passes before its route: the guard, then the body budget.
pub struct Gate {
    pub guard: ApiGuard,
    /// Request-body bytes that may be held at once, in KiB permits.
    bodies: Arc<Semaphore>,
    /// All the permits there are.
    total_kib: u32,
    max_body_bytes: usize,
}

impl Gate {
    pub fn new(guard: ApiGuard, max_body_bytes: usize, max_pending_body_bytes: usize) -> Self {
        let total_kib =
            u32::try_from(max_pending_body_bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        Gate {
            guard,
            bodies: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            max_body_bytes,
        }
    }

    /// The KiB a request's body may take, from its Content-Length (chunked: the largest body),
    /// never more than the whole budget.
    fn body_kib(&self, headers: &HeaderMap) -> u32 {
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        let bytes = match declared {
            Some(length) => length.min(self.max_body_bytes),
            None if headers.contains_key(header::TRANSFER_ENCODING) => self.max_body_bytes,
            None => 0,
        };
        u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .min(self.total_kib)
    }
}

pub fn router(executor: AppState, gate: Gate) -> Router {
    let max_body_bytes = gate.max_body_bytes;
    // Made once, when the server starts; no request reaches this.
    let instance = HeaderValue::from_str(executor.instance())
        .expect("an instance id is hex, which is a valid header value");
    let answering = Arc::new(Answering {
        instance,
        executor: Arc::clone(&executor),
    });
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/containers", get(containers))
        .route("/{id}/init", post(init))
        .route("/{id}/run", post(run))
        .route("/{id}/destroy", post(destroy))
        .route("/{id}/logs", get(logs))
        .fallback(|| async { ApiError(StatusCode::NOT_FOUND, "no such route".into()) })
        .method_not_allowed_fallback(|| async {
            ApiError(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed on this route".into(),
            )
        })
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(middleware::from_fn_with_state(Arc::new(gate), gated))
        .layer(middleware::from_fn_with_state(answering, answered))
        .with_state(executor)
}

/// What every answer passes on its way out.
struct Answering {
    instance: HeaderValue,
    executor: AppState,
}

/// Stamps every answer with the executor's instance, and counts every 503 — whichever limit
/// turned the request away (pool, containers, request bodies) — as a rejection.
async fn answered(
    State(answering): State<Arc<Answering>>,
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

/// Lets a request through to its route when [`ApiGuard`] accepts it and its body fits in
/// what may be held at once; the body's share is held until the answer is made.
async fn gated(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    if let Err(Refusal(status, message)) =
        gate.guard
            .check(request.method(), request.uri().path(), request.headers())
    {
        let mut response = ApiError(status, message).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        return response;
    }
    let kib = gate.body_kib(request.headers());
    if kib == 0 {
        return next.run(request).await;
    }
    match Arc::clone(&gate.bodies).try_acquire_many_owned(kib) {
        Ok(_held) => next.run(request).await,
        Err(_) => ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "the executor holds as many request bodies as it may; retry elsewhere".into(),
        )
        .into_response(),
    }
}

/// An error answer: a status and `{"error": message}`.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        let status = match &error {
            ServiceError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServiceError::Refused(_) => StatusCode::FORBIDDEN,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::InitFailed(_) => StatusCode::BAD_GATEWAY,
            ServiceError::Overloaded(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, error.to_string())
    }
}

/// The container id of a request: one path segment of a restricted alphabet (a segment that
/// is not even UTF-8 gets the same answer).
fn container_id(path: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
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
        Err(ApiError(
            StatusCode::BAD_REQUEST,
            "container ids are 1 to 128 characters of A-Z a-z 0-9 . _ - (not . or ..)".into(),
        ))
    }
}

/// The request's body, or the answer that it could not be read (too large, cut off).
fn received(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| ApiError(rejection.status(), rejection.body_text()))
}

fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
}

async fn init(
    State(executor): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = container_id(path)?;
    let body = received(body)?;
    let request: InitRequest = parse_json(&body)?;
    executor.init(&id, request, &body).await?;
    Ok(Json(json!({ "ok": true })))
}

async fn run(
    State(executor): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
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
        RunResponse::ActionError { message, .. } => Err(ApiError(StatusCode::BAD_GATEWAY, message)),
    }
}

async fn destroy(
    State(executor): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = container_id(path)?;
    executor.destroy(&id)?;
    Ok(Json(json!({ "ok": true })))
}

async fn logs(
    State(executor): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = container_id(path)?;
    let lines = executor.logs(&id)?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], lines).into_response())
}

async fn containers(State(executor): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({ "containers": executor.container_ids() }))
}

async fn health(State(executor): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({
        "status": "ok",
        "instance": executor.instance(),
        "runtime": executor.runtime_name(),
        "runtime_version": executor.runtime_version(),
        "target": executor.target(),
        "portable_modules": executor.portable_modules(),
    }))
}

async fn metrics(State(executor): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        executor.render_metrics(),
    )
        .into_response()
}

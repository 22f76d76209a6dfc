//! The HTTP API the invoker talks to (docs/executor-api.md): routes, body parsing and the one
//! place where errors become status codes and `{"error": …}` bodies.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Path, State, rejection::BytesRejection},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::{
    outcome::RunResponse,
    protocol::{InitRequest, RunRequest},
    service::{Executor, ServiceError},
};

type AppState = Arc<Executor>;

pub fn router(executor: AppState, max_body_bytes: usize) -> Router {
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
        .with_state(executor)
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
            ServiceError::Refused(_) => StatusCode::FORBIDDEN,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::InitFailed(_) => StatusCode::BAD_GATEWAY,
            ServiceError::Overloaded(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, error.to_string())
    }
}

/// Container ids are one path segment of a restricted alphabet.
fn check_id(id: &str) -> Result<(), ApiError> {
    let ok = (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ApiError(
            StatusCode::BAD_REQUEST,
            "container ids are 1 to 128 characters of A-Z a-z 0-9 . _ -".into(),
        ))
    }
}

fn parse_body<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, ApiError> {
    let body = body.map_err(|rejection| ApiError(rejection.status(), rejection.body_text()))?;
    serde_json::from_slice(&body)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
}

async fn init(
    State(executor): State<AppState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    check_id(&id)?;
    let request: InitRequest = parse_body(body)?;
    executor.init(&id, request).await?;
    Ok(Json(json!({ "ok": true })))
}

async fn run(
    State(executor): State<AppState>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_id(&id)?;
    let request: RunRequest = parse_body(body)?;
    match executor.run(&id, request).await? {
        RunResponse::Result(value) => Ok(Json(value).into_response()),
        RunResponse::ActionError { message, .. } => Err(ApiError(StatusCode::BAD_GATEWAY, message)),
    }
}

async fn destroy(
    State(executor): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    check_id(&id)?;
    executor.destroy(&id)?;
    Ok(Json(json!({ "ok": true })))
}

async fn logs(
    State(executor): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    check_id(&id)?;
    let lines = executor.logs(&id)?;
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], lines).into_response())
}

async fn containers(State(executor): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({ "containers": executor.container_ids() }))
}

async fn health(State(executor): State<AppState>) -> Json<serde_json::Value> {
    Json(json!({
        "status": "ok",
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

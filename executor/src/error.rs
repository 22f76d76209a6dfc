//! The executor's failures as the API answers them: each kind, whose fault it is, and its one
//! HTTP status with an `{"error": …}` body (the table in docs/executor-api.md).

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;
use thiserror::Error;

use wasm_executor_decode::snapshot_file::StateFileError;

use crate::{capability::GrantError, outcome::Outcome, pool::PoolError};

/// The `Retry-After` of a 503 that passes as activations end (HTTP wants whole seconds; a client
/// may well ask again sooner).
pub const RETRY_AFTER_SECONDS: &str = "1";

/// Why a request got no result. Every status the API answers with besides 200 comes from
/// [`ServiceError::status`].
#[derive(Debug, Clone, Error)]
pub enum ServiceError {
    /// 400: the request is malformed (its JSON, its container id, its body's encoding).
    #[error("{0}")]
    BadRequest(String),
    /// 401: the executor requires its bearer token and the request did not carry it.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: refused as the action proxies refuse it (a second /init, no code), or a client that
    /// may not use the API (a web page, an unknown `Host`).
    #[error("{0}")]
    Refused(String),
    /// 404: no such container or route.
    #[error("{0}")]
    NotFound(String),
    /// 405: the route takes another method.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// 408: the request's body did not arrive in time.
    #[error("{0}")]
    BodyTimedOut(String),
    /// 413: the request's body is larger than its route takes.
    #[error("{0}")]
    BodyTooLarge(String),
    /// 415: a request body that is not JSON.
    #[error("{0}")]
    NotJson(String),
    /// 502 at /init: the action's code or annotations were refused (the developer's error).
    #[error("{0}")]
    InitFailed(String),
    /// 502 at /run: the action failed (trapped, exited, ran out of time or memory, returned no
    /// dictionary): the developer's error.
    #[error("{0}")]
    ActionFailed(String),
    /// 503 with `Retry-After`: the executor is at capacity for the moment (execution slots and
    /// queue, request bodies, connections); it passes as running activations end.
    #[error("{0}")]
    Overloaded(String),
    /// 503 without `Retry-After`: /init beyond `--max-containers`, which lasts until a container
    /// is destroyed; sending the request again soon does not help.
    #[error("{0}")]
    Full(String),
    /// 500: the executor itself failed (a worker was lost, the runtime could not prepare or
    /// start an instance for a reason that is not the action's, a grant it cannot provide as
    /// configured).
    #[error("{0}")]
    Internal(String),
}

impl ServiceError {
    /// The one place that decides the HTTP status of a failure.
    pub fn status(&self) -> StatusCode {
        match self {
            ServiceError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServiceError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ServiceError::Refused(_) => StatusCode::FORBIDDEN,
            ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
            ServiceError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ServiceError::BodyTimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            ServiceError::BodyTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServiceError::NotJson(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ServiceError::InitFailed(_) | ServiceError::ActionFailed(_) => StatusCode::BAD_GATEWAY,
            ServiceError::Overloaded(_) | ServiceError::Full(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// A /run that ended without a result, by how it ended: the executor's failure when it
    /// could not run the action at all, the action's otherwise.
    pub fn failed_run(outcome: Outcome, message: String) -> Self {
        match outcome {
            Outcome::HostFailure => ServiceError::Internal(message),
            _ => ServiceError::ActionFailed(message),
        }
    }
}

impl From<PoolError> for ServiceError {
    fn from(error: PoolError) -> Self {
        match error {
            PoolError::Overloaded { .. } => ServiceError::Overloaded(error.to_string()),
            PoolError::WorkerLost => ServiceError::Internal(error.to_string()),
        }
    }
}

impl From<GrantError> for ServiceError {
    fn from(error: GrantError) -> Self {
        match error {
            GrantError::Refused(why) => ServiceError::InitFailed(why),
            GrantError::Unavailable(why) => ServiceError::Internal(why),
        }
    }
}

/// A state file uploaded as an action's code that does not parse.
impl From<StateFileError> for ServiceError {
    fn from(error: StateFileError) -> Self {
        ServiceError::InitFailed(format!(
            "Initialization has failed: the action's state file is damaged: {error}"
        ))
    }
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, Json(json!({ "error": self.to_string() }))).into_response();
        let headers = response.headers_mut();
        match self {
            ServiceError::Unauthorized(_) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ServiceError::Overloaded(_) => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from_static(RETRY_AFTER_SECONDS),
                );
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_failure_is_the_executors_fault_and_every_other_failed_run_the_actions() {
        for outcome in Outcome::ALL {
            let status = ServiceError::failed_run(outcome, String::new()).status();
            let expected = match outcome {
                Outcome::HostFailure => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::BAD_GATEWAY,
            };
            assert_eq!(status, expected, "{outcome:?}");
        }
    }

    #[test]
    fn a_grant_the_executor_cannot_provide_is_the_operators_fault_a_refused_one_the_actions() {
        let refused = ServiceError::from(GrantError::Refused("not allowed".into()));
        assert_eq!(refused.status(), StatusCode::BAD_GATEWAY);
        let unavailable = ServiceError::from(GrantError::Unavailable("no quotas".into()));
        assert_eq!(unavailable.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(unavailable.to_string(), "no quotas");
    }

    #[test]
    fn a_missing_token_is_answered_with_the_scheme_to_use() {
        let response = ServiceError::Unauthorized("token".into()).into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let response = ServiceError::Refused("no".into()).into_response();
        assert!(!response.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}

//! Who may talk to the API: every request passes [`ApiGuard::check`] before it reaches a
//! route. A web page must not be able to drive the executor (no browser requests, no foreign
//! `Host` as DNS rebinding would send it, JSON bodies only, which a page cannot send across
//! origins without a preflight this API never answers), and, when the operator configured a
//! token, neither may a local process that does not hold it.

use std::{net::IpAddr, path::Path};

use anyhow::{Context, bail};
use axum::http::{HeaderMap, Method, header};

use crate::error::ServiceError;

/// Host names every executor answers to (besides its own listen address and configured names).
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// What the guard checks, fixed at start.
#[derive(Debug, Clone)]
pub struct ApiGuard {
    /// Accepted `Host` names (lower case, without port); `None` for a Unix-domain socket, which
    /// no web page can reach.
    hosts: Option<Vec<String>>,
    /// The bearer token every request but `GET /health` must carry.
    token: Option<String>,
}

impl ApiGuard {
    /// `listen_ip` is the TCP address the API listens on (`None`: a Unix-domain socket);
    /// `allowed_hosts` are further names the operator lets clients use in `Host`.
    pub fn new(listen_ip: Option<IpAddr>, allowed_hosts: &[String], token: Option<String>) -> Self {
        let hosts = listen_ip.map(|ip| {
            let mut hosts: Vec<String> = LOOPBACK_NAMES.iter().map(|h| h.to_string()).collect();
            hosts.push(ip.to_string());
            hosts.extend(allowed_hosts.iter().map(|h| h.to_ascii_lowercase()));
            hosts
        });
        ApiGuard { hosts, token }
    }

    /// Checks one request's method, path and headers.
    pub fn check(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<(), ServiceError> {
        let forbidden = |message: String| Err(ServiceError::Refused(message));
        // Every request a browser makes for a page carries Origin or Sec-Fetch-* (simple
        // cross-site POSTs and <img> GETs included); the invoker and tools never send them.
        if headers.contains_key(header::ORIGIN)
            || headers.keys().any(|k| k.as_str().starts_with("sec-fetch-"))
        {
            return forbidden("requests from web browsers are not accepted".into());
        }
        if let Some(hosts) = &self.hosts {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(host_name)
                .unwrap_or_default();
            if !hosts.contains(&host) {
                return forbidden(format!(
                    "the Host {host:?} is not served here (loopback names, the listen address and --allowed-host are)"
                ));
            }
        }
        if let Some(token) = &self.token
            && !(method == Method::GET && path == "/health")
        {
            let presented = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default();
            if !same_bytes(presented.trim().as_bytes(), token.as_bytes()) {
                return Err(ServiceError::Unauthorized(
                    "this executor requires its bearer token (Authorization: Bearer …)".into(),
                ));
            }
        }
        if method == Method::POST && has_body(headers) && !is_json(headers) {
            return Err(ServiceError::NotJson(
                "request bodies must be JSON (Content-Type: application/json)".into(),
            ));
        }
        Ok(())
    }
}

/// The host name of a `Host` header value, lower case, without port or IPv6 brackets.
fn host_name(value: &str) -> String {
    let value = value.trim().to_ascii_lowercase();
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default().to_owned();
    }
    // A bare IPv6 address (several colons, no brackets) has no port.
    if value.matches(':').count() > 1 {
        return value;
    }
    match value.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_owned(),
        _ => value,
    }
}

fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// Compares in time independent of where the inputs differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Reads the bearer token from `path`: one line, at least 16 characters, in a file no other
/// user may read.
pub fn read_token(path: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.mode() & 0o007 != 0 {
        bail!(
            "{} is accessible to every user (mode {:o}): chmod o-rwx it",
            path.display(),
            meta.mode() & 0o777
        );
    }
    let token = std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))?
        .trim()
        .to_owned();
    if token.len() < 16 || token.contains(char::is_whitespace) {
        bail!(
            "{} must hold one token of at least 16 characters without spaces",
            path.display()
        );
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn status(r: Result<(), ServiceError>) -> u16 {
        r.map_or_else(|refusal| refusal.status().as_u16(), |()| 200)
    }

    #[test]
    fn browsers_foreign_hosts_and_non_json_bodies_are_refused() {
        let guard = ApiGuard::new(
            Some("127.0.0.1".parse().unwrap()),
            &["invoker0".into()],
            None,
        );
        let post = |h: &[(&str, &str)]| status(guard.check(&Method::POST, "/a/init", &headers(h)));
        let json = ("content-type", "application/json; charset=utf-8");
        assert_eq!(
            post(&[("host", "127.0.0.1:9000"), ("content-length", "2"), json]),
            200
        );
        assert_eq!(
            post(&[("host", "localhost"), ("content-length", "2"), json]),
            200
        );
        assert_eq!(
            post(&[("host", "[::1]:9000"), ("content-length", "2"), json]),
            200
        );
        assert_eq!(
            post(&[("host", "INVOKER0:9000"), ("content-length", "2"), json]),
            200
        );
        // DNS rebinding: a page's own name, resolved to loopback.
        assert_eq!(
            post(&[("host", "evil.example:9000"), ("content-length", "2"), json]),
            403
        );
        assert_eq!(post(&[("content-length", "2"), json]), 403);
        // What a page can send without a preflight.
        let plain = ("content-type", "text/plain");
        assert_eq!(
            post(&[("host", "127.0.0.1"), ("content-length", "2"), plain]),
            415
        );
        assert_eq!(post(&[("host", "127.0.0.1"), ("content-length", "2")]), 415);
        assert_eq!(
            post(&[
                ("host", "127.0.0.1"),
                ("origin", "http://evil.example"),
                json
            ]),
            403
        );
        assert_eq!(
            post(&[("host", "127.0.0.1"), ("sec-fetch-site", "cross-site")]),
            403
        );
        // A POST without a body (/destroy) needs no content type.
        assert_eq!(post(&[("host", "127.0.0.1"), ("content-length", "0")]), 200);
        assert_eq!(post(&[("host", "127.0.0.1")]), 200);
    }

    #[test]
    fn the_token_is_required_except_for_health() {
        let guard = ApiGuard::new(None, &[], Some("s3cret-token-0123456789".into()));
        let get =
            |path: &str, h: &[(&str, &str)]| status(guard.check(&Method::GET, path, &headers(h)));
        assert_eq!(get("/health", &[]), 200);
        assert_eq!(get("/metrics", &[]), 401);
        assert_eq!(get("/a/logs", &[("authorization", "Bearer wrong")]), 401);
        assert_eq!(
            get(
                "/a/logs",
                &[("authorization", "Bearer s3cret-token-0123456789")]
            ),
            200
        );
        // A Unix-domain socket has no Host to check.
        assert_eq!(
            get(
                "/a/logs",
                &[
                    ("authorization", "Bearer s3cret-token-0123456789"),
                    ("host", "x")
                ]
            ),
            200
        );
    }

    #[test]
    fn host_names() {
        assert_eq!(host_name("Example.COM:80"), "example.com");
        assert_eq!(host_name("[::1]:9000"), "::1");
        assert_eq!(host_name("::1"), "::1");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
    }
}

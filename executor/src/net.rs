//! The HTTP GET capability (`openwhisk::http_get`): the operator's policy for which hosts a
//! guest may reach, and the blocking request itself, bounded in time and body size.
//! Backends only move bytes between guest memory and [`HttpGetter::get`].

use std::{
    net::{IpAddr, ToSocketAddrs},
    time::{Duration, Instant},
};

use thiserror::Error;

/// The import module guests link the capability from.
pub const IMPORT_MODULE: &str = "openwhisk";
/// The functions of that module.
pub const IMPORT_NAMES: [&str; 2] = ["http_get", "http_read"];

/// Guest-visible result codes of `http_get` (see actions/README.md).
pub mod code {
    pub const OK: i32 = 0;
    pub const NOT_PERMITTED: i32 = 1;
    pub const REQUEST_FAILED: i32 = 2;
    pub const BODY_TOO_LARGE: i32 = 3;
}

#[derive(Debug, Error)]
pub enum HttpGetError {
    #[error("{0}")]
    NotPermitted(String),
    #[error("request failed: {0}")]
    RequestFailed(String),
    #[error("response body exceeds the limit of {0} bytes")]
    BodyTooLarge(u64),
}

impl HttpGetError {
    pub fn code(&self) -> i32 {
        match self {
            HttpGetError::NotPermitted(_) => code::NOT_PERMITTED,
            HttpGetError::RequestFailed(_) => code::REQUEST_FAILED,
            HttpGetError::BodyTooLarge(_) => code::BODY_TOO_LARGE,
        }
    }
}

#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Performs guests' HTTP GETs under the operator's policy. Shared by all containers.
#[derive(Debug)]
pub struct HttpGetter {
    agent: ureq::Agent,
    allow: Vec<String>,
    timeout: Duration,
    max_body_bytes: u64,
}

impl HttpGetter {
    pub fn new(allow: Vec<String>, timeout: Duration, max_body_bytes: u64) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A redirect could lead from an allowed host to an internal one: the guest gets
            // the 3xx response and decides, and its next request is checked again.
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent("openwhisk-wasm-executor")
            .build()
            .new_agent();
        HttpGetter {
            agent,
            allow: allow.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            timeout,
            max_body_bytes,
        }
    }

    /// GETs `url`, giving up at `deadline` at the latest.
    pub fn get(&self, url: &str, deadline: Instant) -> Result<HttpResponse, HttpGetError> {
        self.check_permitted(url)?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let timeout = self.timeout.min(remaining);
        if timeout.is_zero() {
            return Err(HttpGetError::RequestFailed(
                "the activation deadline has passed".into(),
            ));
        }
        let mut response = self
            .agent
            .get(url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .call()
            .map_err(|e| HttpGetError::RequestFailed(e.to_string()))?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(self.max_body_bytes)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => HttpGetError::BodyTooLarge(self.max_body_bytes),
                other => HttpGetError::RequestFailed(other.to_string()),
            })?;
        Ok(HttpResponse { status, body })
    }

    /// Public hosts are always allowed; hosts resolving to loopback, private, link-local or
    /// other non-global addresses only when the operator listed them (or `*`).
    fn check_permitted(&self, url: &str) -> Result<(), HttpGetError> {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        let default_port = match scheme.as_deref() {
            Some("http") => 80,
            Some("https") => 443,
            _ => {
                return Err(HttpGetError::NotPermitted(format!(
                    "only http and https URLs may be fetched, not {url:?}"
                )));
            }
        };
        let uri: ureq::http::Uri = url
            .parse()
            .map_err(|e| HttpGetError::NotPermitted(format!("invalid URL {url:?}: {e}")))?;
        let host = uri
            .host()
            .ok_or_else(|| HttpGetError::NotPermitted(format!("URL {url:?} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(default_port);
        let listed = self
            .allow
            .iter()
            .any(|a| a == "*" || *a == host || *a == format!("{host}:{port}"));
        if listed {
            return Ok(());
        }
        let addrs = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| HttpGetError::RequestFailed(format!("cannot resolve {host}: {e}")))?;
        for addr in addrs {
            if !is_global(addr.ip()) {
                return Err(HttpGetError::NotPermitted(format!(
                    "{host} resolves to the internal address {}; the operator must allow it with --net-allow",
                    addr.ip()
                )));
            }
        }
        Ok(())
    }
}

/// True for addresses reachable on the public internet.
fn is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
                || (a == 198 && (b == 18 || b == 19)) // benchmarking
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_global(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80) // link local
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn getter(allow: &[&str]) -> HttpGetter {
        HttpGetter::new(
            allow.iter().map(|s| s.to_string()).collect(),
            Duration::from_secs(1),
            1024,
        )
    }

    #[test]
    fn internal_hosts_need_the_operator() {
        let g = getter(&[]);
        for url in [
            "http://127.0.0.1:8080/",
            "http://localhost/",
            "http://10.1.2.3/",
            "http://[::1]/",
        ] {
            assert!(
                matches!(g.check_permitted(url), Err(HttpGetError::NotPermitted(_))),
                "{url}"
            );
        }
        assert!(matches!(
            g.check_permitted("ftp://example.com/"),
            Err(HttpGetError::NotPermitted(_))
        ));
        assert!(matches!(
            g.check_permitted("not a url"),
            Err(HttpGetError::NotPermitted(_))
        ));
        getter(&["127.0.0.1:8080"])
            .check_permitted("http://127.0.0.1:8080/x")
            .unwrap();
        assert!(
            getter(&["127.0.0.1:8080"])
                .check_permitted("http://127.0.0.1:9/")
                .is_err()
        );
        getter(&["*"]).check_permitted("http://10.0.0.1/").unwrap();
    }

    #[test]
    fn global_addresses() {
        assert!(is_global("93.184.216.34".parse().unwrap()));
        assert!(!is_global("192.168.1.1".parse().unwrap()));
        assert!(!is_global("100.64.0.1".parse().unwrap()));
        assert!(!is_global("::ffff:127.0.0.1".parse().unwrap()));
        assert!(is_global("2606:2800:220:1::".parse().unwrap()));
    }
}

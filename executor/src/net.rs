//! The HTTP GET capability (`openwhisk::http_get`): the operator's policy for which hosts a
//! guest may reach, and the blocking request itself, bounded in time and body size.
//! Backends only move bytes between guest memory and [`HttpGetter::get`].

use std::{
    net::{IpAddr, Ipv4Addr},
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
    timeout: Duration,
    max_body_bytes: u64,
}

impl HttpGetter {
    pub fn new(allow: Vec<String>, timeout: Duration, max_body_bytes: u64) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A redirect could lead from an allowed host to an internal one: the guest gets
            // the 3xx response and decides, and its next request is checked again.
            .max_redirects(0)
            .max_redirects_will_error(false)
            // Proxies from the environment would connect on the guest's behalf to addresses
            // the policy never saw.
            .proxy(None)
            .user_agent("openwhisk-wasm-executor")
            .build();
        let resolver = PolicyResolver {
            allow: allow.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            lookup: ureq::unversioned::resolver::DefaultResolver::default(),
        };
        let agent = ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::default(),
            resolver,
        );
        HttpGetter {
            agent,
            timeout,
            max_body_bytes,
        }
    }

    /// GETs `url`, giving up at `deadline` at the latest (name lookup included).
    pub fn get(&self, url: &str, deadline: Instant) -> Result<HttpResponse, HttpGetError> {
        check_url(url)?;
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
            .map_err(request_failure)?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(self.max_body_bytes)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => HttpGetError::BodyTooLarge(self.max_body_bytes),
                other => request_failure(other),
            })?;
        Ok(HttpResponse { status, body })
    }
}

/// Only http and https URLs with a host.
fn check_url(url: &str) -> Result<(), HttpGetError> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("http" | "https")) {
        return Err(HttpGetError::NotPermitted(format!(
            "only http and https URLs may be fetched, not {url:?}"
        )));
    }
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| HttpGetError::NotPermitted(format!("invalid URL {url:?}: {e}")))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(HttpGetError::NotPermitted(format!(
            "URL {url:?} has no host"
        )));
    }
    Ok(())
}

/// A refusal by the policy, carried through ureq as the cause of an I/O error.
#[derive(Debug, Error)]
#[error("{0}")]
struct Refused(String);

/// What a guest learns of a failed request: the kind of failure, never an address (a name
/// that resolves inside the operator's network must not reveal where).
fn request_failure(error: ureq::Error) -> HttpGetError {
    if let ureq::Error::Io(io) = &error
        && let Some(refused) = io.get_ref().and_then(|e| e.downcast_ref::<Refused>())
    {
        return HttpGetError::NotPermitted(refused.0.clone());
    }
    let text = match &error {
        ureq::Error::Timeout(_) => "timed out".to_owned(),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        ureq::Error::ConnectionFailed => "connection failed".to_owned(),
        ureq::Error::Io(io) => format!("{}", io.kind()),
        ureq::Error::Tls(message) => format!("TLS failed: {message}"),
        ureq::Error::Protocol(_) | ureq::Error::Http(_) => {
            "the server's answer is not valid HTTP".to_owned()
        }
        _ => "the request could not be made".to_owned(),
    };
    HttpGetError::RequestFailed(text)
}

/// Resolves a guest's host once, for the connection itself: hosts the operator listed
/// (`--net-allow`, `*` for all) may have any address; others only global ones, every address
/// of them. The connector gets exactly these addresses, so a second, different answer from
/// DNS (rebinding) is never used.
#[derive(Debug)]
struct PolicyResolver {
    allow: Vec<String>,
    lookup: ureq::unversioned::resolver::DefaultResolver,
}

impl ureq::unversioned::resolver::Resolver for PolicyResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        let addrs = self.lookup.resolve(uri, config, timeout)?;
        if listed(&self.allow, &host, port) {
            return Ok(addrs);
        }
        if addrs.iter().any(|a| !is_global(a.ip())) {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                Refused(format!(
                    "{host} resolves to an internal address; the operator must allow it with --net-allow"
                )),
            )));
        }
        Ok(addrs)
    }
}

fn listed(allow: &[String], host: &str, port: u16) -> bool {
    allow
        .iter()
        .any(|a| a == "*" || a == host || *a == format!("{host}:{port}"))
}

/// True for addresses reachable on the public internet. Addresses that embed an IPv4 address
/// (IPv4-mapped and -compatible, NAT64, 6to4) are judged by that address.
fn is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
                || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
                || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
                || (a == 198 && (b == 18 || b == 19)) // benchmarking
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| {
                Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
            };
            // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d
            if s[..5] == [0; 5] && (s[5] == 0xffff || (s[5] == 0 && (s[6] != 0 || s[7] > 1))) {
                return is_global(IpAddr::V4(embedded(s[6], s[7])));
            }
            // NAT64 64:ff9b::/96 translates to the embedded IPv4 address.
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return is_global(IpAddr::V4(embedded(s[6], s[7])));
            }
            // 6to4 2002:a.b.c.d::/48 tunnels to the embedded IPv4 address.
            if s[0] == 0x2002 {
                return is_global(IpAddr::V4(embedded(s[1], s[2])));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] == 0x64 && s[1] == 0xff9b) // local-use NAT64 64:ff9b:1::/48
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0) // Teredo
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x2001 && (s[1] & 0xffe0) == 0x0020) // ORCHIDv2
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])) // discard-only
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn getter(allow: &[&str]) -> HttpGetter {
        HttpGetter::new(
            allow.iter().map(|s| s.to_string()).collect(),
            Duration::from_secs(2),
            1024,
        )
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(2)
    }

    #[test]
    fn internal_hosts_need_the_operator() {
        let g = getter(&[]);
        for url in [
            "http://127.0.0.1:9/",
            "http://localhost:9/",
            "http://10.1.2.3/",
            "http://[::1]:9/",
            "http://[::ffff:127.0.0.1]:9/",
            "http://[64:ff9b::7f00:1]:9/",
        ] {
            match g.get(url, soon()) {
                Err(HttpGetError::NotPermitted(text)) => {
                    assert!(
                        text.contains("internal address") && !text.contains("127.0.0.1:"),
                        "{url}: {text}"
                    );
                }
                other => panic!("{url}: {other:?}"),
            }
        }
        for url in ["ftp://example.com/", "not a url", "http:///path"] {
            assert!(
                matches!(g.get(url, soon()), Err(HttpGetError::NotPermitted(_))),
                "{url}"
            );
        }
        // Listed: the lookup's addresses are used as they are (here nothing listens).
        let listed = getter(&["127.0.0.1:9"]).get("http://127.0.0.1:9/x", soon());
        assert!(
            matches!(listed, Err(HttpGetError::RequestFailed(_))),
            "{listed:?}"
        );
        let other_port = getter(&["127.0.0.1:9"]).get("http://127.0.0.1:10/", soon());
        assert!(
            matches!(other_port, Err(HttpGetError::NotPermitted(_))),
            "{other_port:?}"
        );
    }

    #[test]
    fn global_addresses() {
        for global in [
            "93.184.216.34",
            "2606:2800:220:1::",
            "2002:5db8:d822::1",
            "64:ff9b::5db8:d822",
        ] {
            assert!(is_global(global.parse().unwrap()), "{global}");
        }
        for internal in [
            "192.168.1.1",
            "100.64.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "240.0.0.1",
            "0.1.2.3",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "::",
            "::1",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a00:1::",
            "2001::1",
            "2001:db8::1",
            "fc00::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
        ] {
            assert!(!is_global(internal.parse().unwrap()), "{internal}");
        }
    }
}

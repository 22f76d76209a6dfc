//! The HTTP GET capability (`openwhisk::http_get`): the operator's policy for which hosts a
//! guest may reach, and the request itself, asynchronous (a waiting guest holds no thread),
//! bounded in time and body size, over a connection the container kept from its last GET to the
//! same origin when the server left it open ([`kept`]). Backends only move bytes between guest
//! memory and [`HttpGetter::get`] (or [`HttpGetter::get_blocking`] from a pool thread).

mod kept;

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    pin::pin,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use futures_util::FutureExt;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::{Request, Uri, header};
use hyper_util::rt::TokioIo;
use thiserror::Error;
use tokio::net::TcpStream;
use tokio_rustls::{
    TlsConnector,
    rustls::{ClientConfig, RootCertStore, pki_types::ServerName},
};

use self::kept::{Connection, KeptConnections, Origin};

/// The import module guests link the capability from (its functions: `capability::net_access`).
pub const IMPORT_MODULE: &str = "openwhisk";

/// What the request says it is.
const USER_AGENT: &str = "openwhisk-wasm-executor";

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

/// A failed request, as the guest learns of it: the kind of failure, never an address (a name
/// that resolves inside the operator's network must not reveal where).
fn failed(what: &str) -> HttpGetError {
    HttpGetError::RequestFailed(what.to_owned())
}

#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// The operator's policy and the means of every guest's GETs: shared by all containers, each of
/// which asks through an [`HttpGetter`] of its own.
pub struct HttpClient {
    allow: Vec<String>,
    tls: TlsConnector,
    timeout: Duration,
    max_body_bytes: u64,
    /// The runtime that drives the requests of guests on blocking threads (`host_io.rs`).
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("allow", &self.allow)
            .field("timeout", &self.timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

/// Performs one container's GETs (what `net_access` grants it): the shared [`HttpClient`] and
/// the connections the container keeps open between them, closed when it is destroyed.
pub struct HttpGetter {
    client: Arc<HttpClient>,
    kept: KeptConnections,
}

impl std::fmt::Debug for HttpGetter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpGetter")
            .field("client", &self.client)
            .field("kept", &self.kept.len())
            .finish()
    }
}

/// A URL a guest may ask for, taken apart.
struct Target {
    origin: Origin,
    /// `host[:port]` as the URL gave it, for the `Host` header.
    authority: String,
    path_and_query: String,
}

/// A failed exchange, and whether the server answered anything before it failed: a GET that
/// was never answered on a kept connection (which the server may have just closed) is sent
/// again on a new one.
struct ExchangeFailure {
    error: HttpGetError,
    unanswered: bool,
}

impl From<HttpGetError> for ExchangeFailure {
    fn from(error: HttpGetError) -> Self {
        ExchangeFailure {
            error,
            unanswered: false,
        }
    }
}

/// An answer, and the connection it came over when the server left it open for another.
type Exchanged = (HttpResponse, Option<Box<dyn Connection>>);

impl HttpClient {
    /// `host_io` drives the requests of guests on blocking threads ([`HttpGetter::get_blocking`]).
    pub fn new(
        allow: Vec<String>,
        timeout: Duration,
        max_body_bytes: u64,
        host_io: tokio::runtime::Handle,
    ) -> anyhow::Result<Self> {
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let tls = ClientConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(HttpClient {
            allow: allow.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            tls: TlsConnector::from(Arc::new(tls)),
            timeout,
            max_body_bytes,
            runtime: host_io,
        })
    }

    /// Opens a connection to the target's origin under the policy ([`HttpClient::resolve`]).
    async fn open(&self, origin: &Origin) -> Result<Box<dyn Connection>, HttpGetError> {
        let addrs = self.resolve(origin).await?;
        let tcp = connect(&addrs).await?;
        if !origin.https {
            return Ok(Box::new(tcp));
        }
        let name = ServerName::try_from(origin.host.clone())
            .map_err(|_| failed("TLS failed: the host is not a valid server name"))?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| HttpGetError::RequestFailed(format!("TLS failed: {e}")))?;
        Ok(Box::new(tls))
    }

    /// Resolves the host once, for the connection itself: hosts the operator listed
    /// (`--net-allow`, `*` for all) may have any address; others only global ones, every address
    /// of them. Only these addresses are connected to, so a second, different answer from DNS
    /// (rebinding) is never used.
    async fn resolve(&self, origin: &Origin) -> Result<Vec<SocketAddr>, HttpGetError> {
        let addrs: Vec<SocketAddr> = match origin.host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, origin.port)],
            Err(_) => tokio::net::lookup_host((origin.host.as_str(), origin.port))
                .await
                .map_err(|_| failed("host not found"))?
                .collect(),
        };
        if addrs.is_empty() {
            return Err(failed("host not found"));
        }
        if !listed(&self.allow, &origin.host, origin.port)
            && addrs.iter().any(|a| !is_global(a.ip()))
        {
            return Err(HttpGetError::NotPermitted(format!(
                "{} resolves to an internal address; the operator must allow it with --net-allow",
                origin.host
            )));
        }
        Ok(addrs)
    }
}

impl HttpGetter {
    /// A container's getter, with no connection kept yet.
    pub fn new(client: Arc<HttpClient>) -> Self {
        HttpGetter {
            client,
            kept: KeptConnections::default(),
        }
    }

    /// GETs `url`, giving up at `deadline` at the latest (name lookup included). Redirects are
    /// not followed: a redirect could lead from an allowed host to an internal one, so the guest
    /// gets the 3xx response and decides, and its next request is checked again. No proxy is
    /// used: it would connect on the guest's behalf to addresses the policy never saw.
    pub async fn get(&self, url: &str, deadline: Instant) -> Result<HttpResponse, HttpGetError> {
        let target = parse_url(url)?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let timeout = self.client.timeout.min(remaining);
        if timeout.is_zero() {
            return Err(failed("the activation deadline has passed"));
        }
        tokio::time::timeout(timeout, self.fetch(&target))
            .await
            .unwrap_or_else(|_| Err(failed("timed out")))
    }

    /// [`HttpGetter::get`] for a guest on a pool thread, which waits for it.
    pub fn get_blocking(&self, url: &str, deadline: Instant) -> Result<HttpResponse, HttpGetError> {
        crate::host_io::wait_for(&self.client.runtime, self.get(url, deadline))
    }

    /// The GET over a kept connection to the origin if there is one, else (or when that one
    /// turns out closed before it answered) over a new connection; the connection is kept
    /// afterwards when the server left it open.
    async fn fetch(&self, target: &Target) -> Result<HttpResponse, HttpGetError> {
        let max_body_bytes = self.client.max_body_bytes;
        if let Some(connection) = self.kept.take(&target.origin) {
            match exchange(connection, target, max_body_bytes).await {
                Ok(exchanged) => return Ok(self.keep(target, exchanged)),
                Err(failure) if failure.unanswered => {}
                Err(failure) => return Err(failure.error),
            }
        }
        let connection = self.client.open(&target.origin).await?;
        match exchange(connection, target, max_body_bytes).await {
            Ok(exchanged) => Ok(self.keep(target, exchanged)),
            Err(failure) => Err(failure.error),
        }
    }

    fn keep(&self, target: &Target, (response, open): Exchanged) -> HttpResponse {
        if let Some(connection) = open {
            self.kept.keep(target.origin.clone(), connection);
        }
        response
    }
}

/// Only http and https URLs with a host.
fn parse_url(url: &str) -> Result<Target, HttpGetError> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    let https = match scheme.as_deref() {
        Some("http") => false,
        Some("https") => true,
        _ => {
            return Err(HttpGetError::NotPermitted(format!(
                "only http and https URLs may be fetched, not {url:?}"
            )));
        }
    };
    let uri: Uri = url
        .parse()
        .map_err(|e| HttpGetError::NotPermitted(format!("invalid URL {url:?}: {e}")))?;
    let (Some(host), Some(authority)) = (uri.host().filter(|h| !h.is_empty()), uri.authority())
    else {
        return Err(HttpGetError::NotPermitted(format!(
            "URL {url:?} has no host"
        )));
    };
    if authority.as_str().contains('@') {
        return Err(HttpGetError::NotPermitted(format!(
            "URL {url:?} carries credentials, which are not sent"
        )));
    }
    Ok(Target {
        origin: Origin {
            https,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
        },
        authority: authority.as_str().to_owned(),
        path_and_query: uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
    })
}

/// Connects to the first address that answers, in the order the lookup gave.
async fn connect(addrs: &[SocketAddr]) -> Result<TcpStream, HttpGetError> {
    for addr in addrs {
        if let Ok(stream) = TcpStream::connect(addr).await {
            let _ = stream.set_nodelay(true);
            return Ok(stream);
        }
    }
    Err(failed("connection failed"))
}

/// Sends the GET over `connection` and reads the answer, its body up to `max_body_bytes`. The
/// connection is driven beside the exchange; it comes back with the answer when the server
/// leaves it open (HTTP/1.1 without `Connection: close`, nothing unread), and is closed
/// otherwise.
async fn exchange(
    connection: Box<dyn Connection>,
    target: &Target,
    max_body_bytes: u64,
) -> Result<Exchanged, ExchangeFailure> {
    let invalid = |_| failed("the server's answer is not valid HTTP");
    let (sender, driver) = hyper::client::conn::http1::handshake(TokioIo::new(connection))
        .await
        .map_err(|_| failed("connection failed"))?;
    let request = Request::get(target.path_and_query.as_str())
        .header(header::HOST, target.authority.as_str())
        .header(header::USER_AGENT, USER_AGENT)
        .body(Empty::<Bytes>::new())
        .map_err(|_| failed("the request could not be made"))?;
    let limit = usize::try_from(max_body_bytes).unwrap_or(usize::MAX);
    // The sender moves in and comes back, so that it can be dropped before the connection is
    // taken back.
    let mut exchanged = pin!(async move {
        let mut sender = sender;
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| ExchangeFailure {
                unanswered: !error.is_parse() && !error.is_timeout(),
                error: hyper_failure(error),
            })?;
        let status = response.status().as_u16();
        let reusable = leaves_open(&response);
        let body = Limited::new(response.into_body(), limit)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    HttpGetError::BodyTooLarge(max_body_bytes)
                } else {
                    e.downcast::<hyper::Error>()
                        .map_or_else(invalid, |e| hyper_failure(*e))
                }
            })?
            .to_bytes();
        let response = HttpResponse {
            status,
            body: body.into(),
        };
        Ok::<_, ExchangeFailure>((response, reusable, sender))
    });
    let mut driver = pin!(driver.without_shutdown());
    let (response, reusable, sender) = tokio::select! {
        result = &mut exchanged => result?,
        // Closed: after the answer, which is buffered for the exchange, or with an error, which
        // hyper hands to the exchange too (where it says whether anything was answered).
        _ = &mut driver => return exchanged.await.map(|(response, _, _)| (response, None)),
    };
    if !reusable {
        return Ok((response, None));
    }
    // With the sender gone the idle connection is done at once, its stream handed back.
    drop(sender);
    let open = match driver.now_or_never() {
        Some(Ok(parts)) if parts.read_buf.is_empty() => Some(parts.io.into_inner()),
        _ => None,
    };
    Ok((response, open))
}

/// Whether the server means to keep the connection open after this answer.
fn leaves_open<B>(response: &hyper::Response<B>) -> bool {
    response.version() == hyper::Version::HTTP_11
        && !response
            .headers()
            .get_all(header::CONNECTION)
            .iter()
            .any(|value| {
                value
                    .to_str()
                    .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")))
            })
}

fn hyper_failure(error: hyper::Error) -> HttpGetError {
    if error.is_parse() || error.is_parse_status() || error.is_parse_too_large() {
        failed("the server's answer is not valid HTTP")
    } else if error.is_timeout() {
        failed("timed out")
    } else {
        failed("connection failed")
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
        let client = HttpClient::new(
            allow.iter().map(|s| s.to_string()).collect(),
            Duration::from_secs(2),
            1024,
            tokio::runtime::Handle::current(),
        )
        .unwrap();
        HttpGetter::new(Arc::new(client))
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(2)
    }

    #[tokio::test]
    async fn internal_hosts_need_the_operator() {
        let g = getter(&[]);
        for url in [
            "http://127.0.0.1:9/",
            "http://localhost:9/",
            "http://10.1.2.3/",
            "http://[::1]:9/",
            "http://[::ffff:127.0.0.1]:9/",
            "http://[64:ff9b::7f00:1]:9/",
        ] {
            match g.get(url, soon()).await {
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
                matches!(g.get(url, soon()).await, Err(HttpGetError::NotPermitted(_))),
                "{url}"
            );
        }
        // Listed: the lookup's addresses are used as they are (here nothing listens).
        let listed = getter(&["127.0.0.1:9"])
            .get("http://127.0.0.1:9/x", soon())
            .await;
        assert!(
            matches!(listed, Err(HttpGetError::RequestFailed(_))),
            "{listed:?}"
        );
        let other_port = getter(&["127.0.0.1:9"])
            .get("http://127.0.0.1:10/", soon())
            .await;
        assert!(
            matches!(other_port, Err(HttpGetError::NotPermitted(_))),
            "{other_port:?}"
        );
    }

    /// Serves each of `answers` once, in order, on a loopback port; returns the base URL.
    fn serve(answers: Vec<Vec<u8>>) -> String {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for answer in answers {
                let (mut stream, _) = listener.accept().unwrap();
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let _ = stream.write_all(&answer);
            }
        });
        url
    }

    #[tokio::test]
    async fn answers_come_back_as_they_are_within_the_body_limit() {
        let too_large = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: 2000\r\n\r\n{}",
            "x".repeat(2000)
        );
        let url = serve(vec![
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello".to_vec(),
            b"HTTP/1.1 302 Found\r\nlocation: http://10.0.0.1/\r\ncontent-length: 0\r\n\r\n"
                .to_vec(),
            b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nunframed body".to_vec(),
            too_large.into_bytes(),
            b"SSH-2.0-OpenSSH\r\n".to_vec(),
        ]);
        let host = url.trim_start_matches("http://");
        let g = getter(&[host]);
        let ok = g.get(&format!("{url}/a?b=c"), soon()).await.unwrap();
        assert_eq!((ok.status, ok.body.as_slice()), (200, &b"hello"[..]));
        // A redirect is the guest's to follow (or not).
        let redirect = g.get(&url, soon()).await.unwrap();
        assert_eq!(redirect.status, 302);
        let unframed = g.get(&url, soon()).await.unwrap();
        assert_eq!(unframed.body, b"unframed body");
        assert!(matches!(
            g.get(&url, soon()).await,
            Err(HttpGetError::BodyTooLarge(1024))
        ));
        match g.get(&url, soon()).await {
            Err(HttpGetError::RequestFailed(text)) => {
                assert!(text.contains("not valid HTTP"), "{text}")
            }
            other => panic!("{other:?}"),
        }
    }

    /// What the server does with a connection once it has answered its GETs.
    #[derive(Clone, Copy)]
    enum Then {
        Close,
        /// Reads the next request, then closes without an answer.
        CloseUnanswered,
        /// Leaves it open until the client closes it.
        StayOpen,
    }

    /// Serves one connection after another, answering each connection's `bodies` in turn (one
    /// GET each, kept alive) and then doing what it says; returns the base URL and what the
    /// server saw (a line per connection).
    fn serve_connections(
        plan: Vec<(&'static [&'static str], Then)>,
    ) -> (String, std::sync::mpsc::Receiver<String>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (seen, saw) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (bodies, then) in plan {
                let (mut stream, _) = listener.accept().unwrap();
                let mut request = [0u8; 4096];
                let mut requests = 0;
                for body in bodies {
                    if stream.read(&mut request).unwrap_or(0) == 0 {
                        break;
                    }
                    requests += 1;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(answer.as_bytes());
                }
                match then {
                    Then::Close => {}
                    Then::CloseUnanswered => {
                        let _ = stream.read(&mut request);
                    }
                    Then::StayOpen => {
                        seen.send(format!("{requests} requests")).unwrap();
                        let _ = stream.read(&mut request);
                        continue;
                    }
                }
                seen.send(format!("{requests} requests")).unwrap();
            }
        });
        (url, saw)
    }

    #[tokio::test]
    async fn a_get_the_kept_connection_never_answered_is_sent_again_on_a_new_one() {
        let (url, saw) = serve_connections(vec![
            (&["one"], Then::CloseUnanswered),
            (&["two"], Then::StayOpen),
        ]);
        let g = getter(&[url.trim_start_matches("http://")]);
        assert_eq!(g.get(&url, soon()).await.unwrap().body, b"one");
        assert_eq!(g.get(&url, soon()).await.unwrap().body, b"two");
        assert_eq!(saw.recv().unwrap(), "1 requests");
        assert_eq!(saw.recv().unwrap(), "1 requests");
    }

    #[tokio::test]
    async fn a_connection_left_open_is_reused_until_the_server_closes_it() {
        let (url, saw) = serve_connections(vec![
            (&["one", "two"], Then::Close),
            (&["three"], Then::StayOpen),
        ]);
        let g = getter(&[url.trim_start_matches("http://")]);
        for body in ["one", "two"] {
            let got = g.get(&url, soon()).await.unwrap();
            assert_eq!(got.body, body.as_bytes(), "both on the first connection");
        }
        assert_eq!(saw.recv().unwrap(), "2 requests");
        // The first connection is closed now; the third GET goes over a new one.
        let got = g.get(&url, soon()).await.unwrap();
        assert_eq!(got.body, b"three");
        assert_eq!(saw.recv().unwrap(), "1 requests");
        assert_eq!(g.kept.len(), 1);
        // Another container's getter has connections of its own.
        let other = HttpGetter::new(Arc::clone(&g.client));
        assert_eq!(other.kept.len(), 0);
    }

    #[tokio::test]
    async fn a_silent_server_is_left_at_the_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let g = getter(&["*"]);
        let started = Instant::now();
        let result = g
            .get(&url, Instant::now() + Duration::from_millis(200))
            .await;
        assert!(
            matches!(&result, Err(HttpGetError::RequestFailed(t)) if t == "request failed: timed out" || t == "timed out"),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(listener);
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

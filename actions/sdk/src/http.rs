//! Blocking HTTP GET: the executor's `openwhisk.http_get` import in a module, a small HTTP/1.1
//! client over `std::net::TcpStream` natively.
//!
//! In a Wasm module the import exists only when the action is created with the `net_access`
//! annotation, and only modules that call [`get`] reference it (an action that never calls it
//! has no `openwhisk` import at all). The operator may restrict the hosts an action can reach
//! and bounds the body size; both show up as [`HttpError`]s.

use std::borrow::Cow;
use std::fmt;

/// An HTTP response: status code and the whole body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code, e.g. 200.
    pub status: u16,
    /// The response body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text, invalid UTF-8 replaced by U+FFFD.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }
}

/// Why a GET failed; each variant carries a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// Malformed URL, unsupported scheme, or a host the operator does not allow (host code 1).
    NotPermitted(String),
    /// Connection error, timeout, TLS or protocol failure (host code 2).
    RequestFailed(String),
    /// The body is larger than the operator's bound (host code 3).
    TooLarge(String),
    /// Any other code from the host.
    Other(i32, String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::NotPermitted(m) => write!(f, "HTTP request not permitted: {m}"),
            HttpError::RequestFailed(m) => write!(f, "HTTP request failed: {m}"),
            HttpError::TooLarge(m) => write!(f, "HTTP response too large: {m}"),
            HttpError::Other(code, m) => write!(f, "HTTP request failed (code {code}): {m}"),
        }
    }
}

impl std::error::Error for HttpError {}

/// Performs a blocking HTTP GET of `url` and returns the status and the whole body.
///
/// Any status (including 4xx/5xx) is a successful [`Response`]; only transport-level problems
/// are errors.
pub fn get(url: &str) -> Result<Response, HttpError> {
    imp::get(url)
}

#[cfg(target_family = "wasm")]
mod imp {
    use super::{HttpError, Response};

    #[link(wasm_import_module = "openwhisk")]
    unsafe extern "C" {
        fn http_get(
            url_ptr: *const u8,
            url_len: usize,
            status_ptr: *mut u32,
            len_ptr: *mut u32,
        ) -> i32;
        fn http_read(buf_ptr: *mut u8, buf_len: usize) -> i32;
    }

    /// Takes the body (or error message) the host holds after `http_get`, releasing it.
    fn take_held(len: u32) -> Vec<u8> {
        let len = len as usize;
        let mut buf: Vec<u8> = Vec::with_capacity(len);
        // SAFETY: the host writes at most `len` bytes into the `len` bytes of spare capacity.
        let copied = unsafe { http_read(buf.as_mut_ptr(), len) };
        let copied = usize::try_from(copied).unwrap_or(0).min(len);
        // SAFETY: the host initialised the first `copied` bytes.
        unsafe { buf.set_len(copied) };
        buf
    }

    pub fn get(url: &str) -> Result<Response, HttpError> {
        let mut status: u32 = 0;
        let mut len: u32 = 0;
        // SAFETY: the URL slice is valid for reading; the two out-pointers are valid u32s.
        let code = unsafe { http_get(url.as_ptr(), url.len(), &mut status, &mut len) };
        let held = take_held(len);
        let message = || String::from_utf8_lossy(&held).into_owned();
        match code {
            0 => Ok(Response {
                status: u16::try_from(status).unwrap_or(u16::MAX),
                body: held,
            }),
            1 => Err(HttpError::NotPermitted(message())),
            2 => Err(HttpError::RequestFailed(message())),
            3 => Err(HttpError::TooLarge(message())),
            other => Err(HttpError::Other(other, message())),
        }
    }
}

#[cfg(not(target_family = "wasm"))]
mod imp {
    use super::{HttpError, Response};
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpStream, ToSocketAddrs};
    use std::time::Duration;

    /// Largest body the native client accepts.
    const MAX_BODY: u64 = 64 << 20;
    /// Longest status or header line accepted.
    const MAX_LINE: u64 = 64 << 10;
    const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    const IO_TIMEOUT: Duration = Duration::from_secs(30);

    /// The parts of an `http://` URL the client needs.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) struct Target {
        pub authority: String,
        pub host: String,
        pub port: u16,
        pub path: String,
    }

    pub(super) fn parse_url(url: &str) -> Result<Target, HttpError> {
        let not_permitted = |m: &str| HttpError::NotPermitted(format!("{m}: {url}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| not_permitted("malformed URL"))?;
        if !scheme.eq_ignore_ascii_case("http") {
            return Err(not_permitted(
                "only http:// URLs are supported by the native client",
            ));
        }
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.contains('@') {
            return Err(not_permitted("credentials in URLs are not supported"));
        }
        let tail = tail.split('#').next().unwrap_or("");
        let path = if tail.starts_with('/') {
            tail.to_string()
        } else {
            format!("/{tail}")
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| not_permitted("malformed IPv6 host"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(not_permitted("malformed host")),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() || path.chars().any(|c| c.is_ascii_control() || c == ' ') {
            return Err(not_permitted("malformed URL"));
        }
        let port = match port {
            None | Some("") => 80,
            Some(p) => p.parse().map_err(|_| not_permitted("malformed port"))?,
        };
        Ok(Target {
            authority: authority.to_string(),
            host: host.to_string(),
            port,
            path,
        })
    }

    fn failed(what: &str, err: impl std::fmt::Display) -> HttpError {
        HttpError::RequestFailed(format!("{what}: {err}"))
    }

    fn connect(target: &Target) -> Result<TcpStream, HttpError> {
        let addrs = (target.host.as_str(), target.port)
            .to_socket_addrs()
            .map_err(|e| failed(&format!("cannot resolve {}", target.host), e))?;
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) => failed(&format!("cannot connect to {}", target.authority), e),
            None => HttpError::RequestFailed(format!("no address for {}", target.host)),
        })
    }

    fn read_line(reader: &mut impl BufRead) -> Result<String, HttpError> {
        let mut line = Vec::new();
        reader
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| failed("reading response", e))?;
        if line.last() != Some(&b'\n') {
            return Err(HttpError::RequestFailed(
                "connection closed or line too long in response head".into(),
            ));
        }
        let text = String::from_utf8_lossy(&line);
        Ok(text.trim_end_matches(['\r', '\n']).to_string())
    }

    /// The status and the two headers that decide how the body is framed.
    struct Head {
        status: u16,
        content_length: Option<u64>,
        chunked: bool,
    }

    fn read_head(reader: &mut impl BufRead) -> Result<Head, HttpError> {
        loop {
            let status_line = read_line(reader)?;
            let mut parts = status_line.split_whitespace();
            let version = parts.next().unwrap_or("");
            let status: u16 = parts
                .next()
                .and_then(|s| s.parse().ok())
                .filter(|_| version.starts_with("HTTP/"))
                .ok_or_else(|| {
                    HttpError::RequestFailed(format!("malformed status line: {status_line:?}"))
                })?;
            let mut head = Head {
                status,
                content_length: None,
                chunked: false,
            };
            loop {
                let line = read_line(reader)?;
                if line.is_empty() {
                    break;
                }
                let Some((name, value)) = line.split_once(':') else {
                    continue;
                };
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    head.content_length = Some(value.parse().map_err(|_| {
                        HttpError::RequestFailed(format!("bad Content-Length {value:?}"))
                    })?);
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    head.chunked = value
                        .rsplit(',')
                        .next()
                        .is_some_and(|v| v.trim().eq_ignore_ascii_case("chunked"));
                }
            }
            // Interim 1xx responses are followed by the real one.
            if !(100..200).contains(&status) {
                return Ok(head);
            }
        }
    }

    fn read_exactly(reader: &mut impl Read, n: u64, body: &mut Vec<u8>) -> Result<(), HttpError> {
        if body.len() as u64 + n > MAX_BODY {
            return Err(HttpError::TooLarge(format!(
                "body exceeds {MAX_BODY} bytes"
            )));
        }
        let got = reader
            .take(n)
            .read_to_end(body)
            .map_err(|e| failed("reading body", e))?;
        if (got as u64) < n {
            return Err(HttpError::RequestFailed(format!(
                "body truncated: expected {n} more bytes, got {got}"
            )));
        }
        Ok(())
    }

    fn read_chunked(reader: &mut impl BufRead, body: &mut Vec<u8>) -> Result<(), HttpError> {
        loop {
            let line = read_line(reader)?;
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = u64::from_str_radix(size_text, 16)
                .map_err(|_| HttpError::RequestFailed(format!("bad chunk size {size_text:?}")))?;
            if size == 0 {
                // Trailer fields, then the empty line that ends the message.
                while !read_line(reader)?.is_empty() {}
                return Ok(());
            }
            read_exactly(reader, size, body)?;
            read_line(reader)?;
        }
    }

    pub(super) fn read_response(reader: &mut impl BufRead) -> Result<Response, HttpError> {
        let head = read_head(reader)?;
        let mut body = Vec::new();
        if head.status == 204 || head.status == 304 {
            // No body by definition.
        } else if head.chunked {
            read_chunked(reader, &mut body)?;
        } else if let Some(n) = head.content_length {
            read_exactly(reader, n, &mut body)?;
        } else {
            let got = reader
                .take(MAX_BODY + 1)
                .read_to_end(&mut body)
                .map_err(|e| failed("reading body", e))?;
            if got as u64 > MAX_BODY {
                return Err(HttpError::TooLarge(format!(
                    "body exceeds {MAX_BODY} bytes"
                )));
            }
        }
        Ok(Response {
            status: head.status,
            body,
        })
    }

    pub fn get(url: &str) -> Result<Response, HttpError> {
        let target = parse_url(url)?;
        let mut stream = connect(&target)?;
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| failed("socket setup", e))?;
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: openwhisk-wasm-sdk\r\n\
             Accept: */*\r\nConnection: close\r\n\r\n",
            target.path, target.authority
        );
        stream
            .write_all(request.as_bytes())
            .and_then(|()| stream.flush())
            .map_err(|e| failed("sending request", e))?;
        read_response(&mut BufReader::new(stream))
    }
}

#[cfg(all(test, not(target_family = "wasm")))]
mod tests {
    use super::imp::{Target, parse_url, read_response};
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    #[test]
    fn parses_urls() {
        assert_eq!(
            parse_url("http://127.0.0.1:8080/a?b=1#frag").unwrap(),
            Target {
                authority: "127.0.0.1:8080".into(),
                host: "127.0.0.1".into(),
                port: 8080,
                path: "/a?b=1".into()
            }
        );
        let t = parse_url("HTTP://example.com").unwrap();
        assert_eq!((t.port, t.path.as_str()), (80, "/"));
        let t = parse_url("http://[::1]:81?x").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("::1", 81, "/?x")
        );
        for bad in [
            "https://x/",
            "ftp://x",
            "nope",
            "http://:80/",
            "http://h:x/",
            "http://u@h/",
        ] {
            assert!(
                matches!(parse_url(bad), Err(HttpError::NotPermitted(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn reads_framings() {
        let cl = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA";
        let r = read_response(&mut &cl[..]).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));

        let chunked = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n\
                        3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nTrailer: 1\r\n\r\n";
        let r = read_response(&mut &chunked[..]).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (201, &b"abc0123456789"[..]));

        let eof = b"HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nmissing";
        let r = read_response(&mut &eof[..]).unwrap();
        assert_eq!((r.status, r.text().as_ref()), (404, "missing"));

        let cont = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(read_response(&mut &cont[..]).unwrap().status, 204);

        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc";
        assert!(matches!(
            read_response(&mut &short[..]),
            Err(HttpError::RequestFailed(_))
        ));
        assert!(read_response(&mut &b"garbage\r\n\r\n"[..]).is_err());
    }

    #[test]
    fn gets_from_a_local_server() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = conn.read(&mut buf).unwrap();
            let request = String::from_utf8_lossy(&buf[..n]).into_owned();
            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            request
        });
        let r = get(&format!("http://127.0.0.1:{port}/x")).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
        let request = server.join().unwrap();
        assert!(request.starts_with("GET /x HTTP/1.1\r\n"), "{request}");
        assert!(request.contains("Connection: close\r\n"));
    }

    #[test]
    fn connection_refused_is_request_failed() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let err = get(&format!("http://127.0.0.1:{port}/")).unwrap_err();
        assert!(matches!(err, HttpError::RequestFailed(_)), "{err}");
    }
}

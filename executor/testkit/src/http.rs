//! The one HTTP/1.1 client of the tests and the benchmarks, just enough for the executor's API:
//! `Content-Length` bodies both ways and no hidden work on the timed path. Blocking over
//! `std::net::TcpStream` (a new connection per request, as OpenWhisk's invoker does, or one
//! kept-alive connection); async over tokio's for the open-loop generator (a new connection per
//! request), so that an activation waiting for its answer holds no thread; and raw, for tests
//! that send what no client should ([`exchange`]).

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use anyhow::{Context, bail};

/// How a client uses TCP connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnMode {
    /// Connect, send one request, read the answer, close: what the invoker does.
    New,
    /// One persistent connection, reopened only if the server closes it.
    KeepAlive,
}

/// A complete response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON; panics (in a test) when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response is not JSON ({e}): {}", self.text()))
    }

    /// The `error` text of an error answer.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error field in {}", self.text()))
            .to_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts the status (in a test).
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(
            self.status,
            status,
            "unexpected status, body: {}",
            self.text()
        );
        self
    }
}

/// Bodies up to this size are copied behind the request head and sent with one `write`.
const COALESCE_LIMIT: usize = 64 * 1024;
/// Longest response head we accept.
const MAX_HEAD: usize = 64 * 1024;
/// Time limit of every socket read and write, so a stuck executor fails the run. Above the
/// longest honest wait: an /init waits for its engine's first compile, which under wasmer's
/// LLVM takes a minute alone on 2 cores and over two with the suite's other tests beside it.
const IO_TIMEOUT: Duration = Duration::from_secs(300);

/// One client: a connection mode, an optional live connection and reusable buffers.
pub struct Client {
    addr: SocketAddr,
    mode: ConnMode,
    /// Sent as `Authorization: Bearer …`, for an executor with a token.
    token: Option<String>,
    conn: Option<TcpStream>,
    out: Vec<u8>,
    inbuf: Vec<u8>,
}

impl Client {
    pub fn new(addr: SocketAddr, mode: ConnMode) -> Self {
        Client {
            addr,
            mode,
            token: None,
            conn: None,
            out: Vec::with_capacity(4096),
            inbuf: Vec::with_capacity(16 * 1024),
        }
    }

    /// Sends `token` with every request.
    pub fn with_token(mut self, token: Option<String>) -> Self {
        self.token = token;
        self
    }

    pub fn get(&mut self, path: &str) -> anyhow::Result<Response> {
        self.request("GET", path, &[])
    }

    pub fn post(&mut self, path: &str, body: &[u8]) -> anyhow::Result<Response> {
        self.request("POST", path, body)
    }

    /// Sends one request and reads the whole response. With keep-alive, a request that fails
    /// on a reused connection (closed by the server meanwhile) is retried once on a new one.
    pub fn request(&mut self, method: &str, path: &str, body: &[u8]) -> anyhow::Result<Response> {
        let reused = self.conn.is_some();
        match self.try_request(method, path, body) {
            Ok(response) => Ok(response),
            Err(_) if reused => {
                self.conn = None;
                self.try_request(method, path, body)
            }
            Err(error) => Err(error),
        }
    }

    fn try_request(&mut self, method: &str, path: &str, body: &[u8]) -> anyhow::Result<Response> {
        let mut stream = match self.conn.take() {
            Some(stream) => stream,
            None => connect(self.addr)?,
        };
        let keep_alive = self.mode == ConnMode::KeepAlive;
        self.out.clear();
        write_head(
            &mut self.out,
            RequestHead {
                method,
                path,
                host: self.addr,
                token: self.token.as_deref(),
                length: body.len(),
                keep_alive,
            },
        );
        let sent = if body.len() <= COALESCE_LIMIT {
            self.out.extend_from_slice(body);
            stream.write_all(&self.out)
        } else {
            stream
                .write_all(&self.out)
                .and_then(|()| stream.write_all(body))
        };
        // A server may answer before it has read the whole body (a 413) and close; the rest of
        // the body then meets a closed socket. Like curl, read the answer that came first.
        let (response, server_keeps) = match read_response(&mut stream, &mut self.inbuf) {
            Ok(answer) => answer,
            Err(unanswered) => {
                return Err(match sent {
                    Err(refused) => anyhow::Error::new(refused).context("sending the request"),
                    Ok(()) => unanswered,
                });
            }
        };
        if keep_alive && server_keeps && sent.is_ok() {
            self.conn = Some(stream);
        }
        Ok(response)
    }
}

fn connect(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(stream)
}

/// A request head as the invoker sends it.
struct RequestHead<'a> {
    method: &'a str,
    path: &'a str,
    host: SocketAddr,
    token: Option<&'a str>,
    length: usize,
    keep_alive: bool,
}

/// Writes a request head to `out`.
fn write_head(out: &mut Vec<u8>, head: RequestHead<'_>) {
    let RequestHead {
        method,
        path,
        host,
        token,
        length,
        keep_alive,
    } = head;
    let connection = if keep_alive { "keep-alive" } else { "close" };
    // Writing to a Vec cannot fail.
    let _ = write!(
        out,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    );
    if let Some(token) = token {
        let _ = write!(out, "Authorization: Bearer {token}\r\n");
    }
    let _ = write!(
        out,
        "Content-Length: {length}\r\nConnection: {connection}\r\n\r\n"
    );
}

/// What a complete response head says.
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
    /// Where the body starts in the buffer, and its length.
    body_start: usize,
    length: usize,
    /// The server keeps the connection open.
    keeps: bool,
}

impl Head {
    /// Bytes the whole response takes in the buffer.
    fn end(&self) -> usize {
        self.body_start + self.length
    }

    fn response(&self, buf: &[u8]) -> Response {
        Response {
            status: self.status,
            headers: self.headers.clone(),
            body: buf[self.body_start..self.end()].to_vec(),
        }
    }
}

/// The response head at the start of `buf`, or `None` while it is incomplete.
fn parse_head(buf: &[u8]) -> anyhow::Result<Option<Head>> {
    let Some(head_end) = find_head_end(buf) else {
        if buf.len() > MAX_HEAD {
            bail!("response head longer than {MAX_HEAD} bytes");
        }
        return Ok(None);
    };
    let head = std::str::from_utf8(&buf[..head_end]).context("response head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let mut content_length = None;
    let mut keeps = !status_line.starts_with("HTTP/1.0");
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        headers.push((name.trim().to_owned(), value.to_owned()));
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(value.parse::<usize>().context("bad Content-Length")?);
        } else if name.eq_ignore_ascii_case("connection") {
            keeps = !value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            bail!("chunked responses are not supported (the executor always sends Content-Length)");
        }
    }
    Ok(Some(Head {
        status,
        headers,
        body_start: head_end + 4,
        length: content_length.context("response without Content-Length")?,
        keeps,
    }))
}

/// Reads one response; also says whether the server keeps the connection open.
fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> anyhow::Result<(Response, bool)> {
    buf.clear();
    let head = loop {
        if let Some(head) = parse_head(buf)? {
            break head;
        }
        if fill(stream, buf)? == 0 {
            bail!("connection closed before a complete response head");
        }
    };
    while buf.len() < head.end() {
        if fill(stream, buf)? == 0 {
            bail!("connection closed inside the response body");
        }
    }
    Ok((head.response(buf), head.keeps))
}

/// Sends one POST on a new connection and reads the whole answer, as the blocking client in
/// `ConnMode::New` does, without holding a thread meanwhile; fails after the socket time limit.
pub async fn post_async(addr: SocketAddr, path: &str, body: &[u8]) -> anyhow::Result<Response> {
    tokio::time::timeout(IO_TIMEOUT, post_on_new_connection(addr, path, body))
        .await
        .with_context(|| format!("no answer from {addr} within {IO_TIMEOUT:?}"))?
}

async fn post_on_new_connection(
    addr: SocketAddr,
    path: &str,
    body: &[u8],
) -> anyhow::Result<Response> {
    use tokio::io::AsyncWriteExt as _;
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    stream.set_nodelay(true)?;
    let mut out = Vec::with_capacity(512 + body.len().min(COALESCE_LIMIT));
    write_head(
        &mut out,
        RequestHead {
            method: "POST",
            path,
            host: addr,
            token: None,
            length: body.len(),
            keep_alive: false,
        },
    );
    if body.len() <= COALESCE_LIMIT {
        out.extend_from_slice(body);
        stream
            .write_all(&out)
            .await
            .context("sending the request")?;
    } else {
        stream
            .write_all(&out)
            .await
            .context("sending the request head")?;
        stream
            .write_all(body)
            .await
            .context("sending the request body")?;
    }
    let mut buf = Vec::with_capacity(4096);
    let head = loop {
        if let Some(head) = parse_head(&buf)? {
            break head;
        }
        read_more(&mut stream, &mut buf, "before a complete response head").await?;
    };
    while buf.len() < head.end() {
        read_more(&mut stream, &mut buf, "inside the response body").await?;
    }
    Ok(head.response(&buf))
}

/// Appends what the next read returns; the peer closing is an error (`at`: where in the
/// response it closed).
async fn read_more(
    stream: &mut tokio::net::TcpStream,
    buf: &mut Vec<u8>,
    at: &str,
) -> anyhow::Result<()> {
    use tokio::io::AsyncReadExt as _;
    if stream.read_buf(buf).await.context("reading the response")? == 0 {
        bail!("connection closed {at}");
    }
    Ok(())
}

/// Writes one request with exactly `headers` (plus Content-Length and `Connection: close`) on
/// `stream` and reads the whole answer, until the server closes. A server may answer before it
/// has read the whole body (a 413) and close; the rest of the body then meets a closed socket.
/// Like curl, this stops sending and reads the answer, which arrived before the close.
pub fn exchange(
    mut stream: impl Read + Write,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes())?;
    let sent = stream.write_all(body);
    let mut raw = Vec::new();
    // A reset after an answer keeps what was read (the peer closed with part of the request
    // unread).
    let received = match stream.read_to_end(&mut raw) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !raw.is_empty() => Ok(0),
        other => other,
    };
    match (sent, received) {
        (Err(refused), _) if raw.is_empty() => Err(refused),
        (_, Err(e)) if raw.is_empty() => Err(e),
        _ => Ok(parse_response(&raw)),
    }
}

/// The one response in `raw`, which must end with its body; panics (in a test) otherwise.
pub fn parse_response(raw: &[u8]) -> Response {
    let head = parse_head(raw)
        .unwrap_or_else(|e| panic!("{e:#}: {:?}", String::from_utf8_lossy(raw)))
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    assert_eq!(
        head.end(),
        raw.len(),
        "Content-Length does not match the body"
    );
    head.response(raw)
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Appends what one `read` returns; 0 means the peer closed.
fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> anyhow::Result<usize> {
    let mut chunk = [0u8; 16 * 1024];
    let n = stream.read(&mut chunk).context("reading the response")?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-shot server answering each request on one connection with a canned response.
    fn serve(responses: Vec<&'static str>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            for r in responses {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).unwrap();
                s.write_all(r.as_bytes()).unwrap();
            }
        });
        addr
    }

    #[test]
    fn reads_content_length_bodies_and_keeps_the_connection() {
        let addr = serve(vec![
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
            "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!",
        ]);
        let mut client = Client::new(addr, ConnMode::KeepAlive);
        let a = client.post("/x/run", b"{}").unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, b"{}".as_slice()));
        let b = client.get("/y").unwrap();
        assert_eq!((b.status, b.text().as_str()), (404, "nope!"));
        assert_eq!(b.header("content-length"), Some("5"));
    }

    #[test]
    fn the_async_client_reads_an_answer_that_arrives_in_pieces() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.ends_with(b"{\"a\":1}") {
                let n = s.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
            }
            for piece in [
                "HTTP/1.1 200 OK\r\nContent-",
                "Length: 7\r\n\r\n{\"b\"",
                ":2}",
            ] {
                s.write_all(piece.as_bytes()).unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
            String::from_utf8(request).unwrap()
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let response = runtime
            .block_on(post_async(addr, "/x/run", br#"{"a":1}"#))
            .unwrap();
        assert_eq!(
            (response.status, response.text().as_str()),
            (200, r#"{"b":2}"#)
        );
        let request = server.join().unwrap();
        assert!(request.starts_with("POST /x/run HTTP/1.1\r\n"), "{request}");
        assert!(
            request.contains("Content-Length: 7\r\nConnection: close\r\n"),
            "{request}"
        );
    }
}

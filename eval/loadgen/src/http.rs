//! A minimal blocking HTTP/1.1 client over `std::net::TcpStream`, just enough for the
//! executor's API: `Content-Length` bodies both ways, a new connection per request (as
//! OpenWhisk's invoker does) or one kept-alive connection, and no hidden work on the timed path.

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
    pub body: Vec<u8>,
}

impl Response {
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Bodies up to this size are copied behind the request head and sent with one `write`.
const COALESCE_LIMIT: usize = 64 * 1024;
/// Longest response head we accept.
const MAX_HEAD: usize = 64 * 1024;
/// Time limit of every socket read and write, so a stuck executor fails the run.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

/// One client: a connection mode, an optional live connection and reusable buffers.
pub struct Client {
    addr: SocketAddr,
    mode: ConnMode,
    conn: Option<TcpStream>,
    out: Vec<u8>,
    inbuf: Vec<u8>,
}

impl Client {
    pub fn new(addr: SocketAddr, mode: ConnMode) -> Self {
        Client {
            addr,
            mode,
            conn: None,
            out: Vec::with_capacity(4096),
            inbuf: Vec::with_capacity(16 * 1024),
        }
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
        write!(
            self.out,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
            self.addr,
            body.len(),
            if keep_alive { "keep-alive" } else { "close" }
        )?;
        if body.len() <= COALESCE_LIMIT {
            self.out.extend_from_slice(body);
            stream.write_all(&self.out).context("sending the request")?;
        } else {
            stream
                .write_all(&self.out)
                .context("sending the request head")?;
            stream.write_all(body).context("sending the request body")?;
        }
        let (response, server_keeps) = read_response(&mut stream, &mut self.inbuf)?;
        if keep_alive && server_keeps {
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

/// Reads one response; also says whether the server keeps the connection open.
fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> anyhow::Result<(Response, bool)> {
    buf.clear();
    let head_end = loop {
        if let Some(pos) = find_head_end(buf) {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            bail!("response head longer than {MAX_HEAD} bytes");
        }
        if fill(stream, buf)? == 0 {
            bail!("connection closed before a complete response head");
        }
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
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(value.parse::<usize>().context("bad Content-Length")?);
        } else if name.eq_ignore_ascii_case("connection") {
            keeps = !value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            bail!("chunked responses are not supported (the executor always sends Content-Length)");
        }
    }
    let length = content_length.context("response without Content-Length")?;
    let body_start = head_end + 4;
    while buf.len() < body_start + length {
        if fill(stream, buf)? == 0 {
            bail!("connection closed inside the response body");
        }
    }
    let body = buf[body_start..body_start + length].to_vec();
    Ok((Response { status, body }, keeps))
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
        assert_eq!((b.status, b.body_text().as_str()), (404, "nope!"));
    }
}

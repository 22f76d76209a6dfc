//! A small threaded HTTP/1.1 server for the evaluation's own services (the delay server the
//! I/O-bound actions call, the gateway JMeter drives): a thread per connection, keep-alive,
//! `Content-Length` bodies, and a handler from request to response.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::Context;

/// Largest request body accepted.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// Idle keep-alive connections are closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: serde_json::to_vec(value).expect("JSON values serialize"),
        }
    }
}

pub type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// A running server; stops accepting when dropped.
pub struct Server {
    pub addrs: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Serves `handler` on every address in `binds` (port 0: the kernel's choice, the same
    /// port is then reused for the later addresses).
    pub fn start(binds: &[SocketAddr], handler: Arc<Handler>) -> anyhow::Result<Server> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut addrs = Vec::new();
        let mut port = 0;
        for bind in binds {
            let mut bind = *bind;
            if bind.port() == 0 {
                bind.set_port(port);
            }
            let listener =
                TcpListener::bind(bind).with_context(|| format!("listening on {bind}"))?;
            let addr = listener.local_addr()?;
            port = addr.port();
            addrs.push(addr);
            let handler = Arc::clone(&handler);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(format!("accept-{addr}"))
                .spawn(move || accept_loop(listener, handler, stop))?;
        }
        Ok(Server { addrs, stop })
    }

    pub fn port(&self) -> u16 {
        self.addrs[0].port()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loops so they see the flag.
        for addr in &self.addrs {
            let _ = TcpStream::connect_timeout(addr, Duration::from_millis(100));
        }
    }
}

fn accept_loop(listener: TcpListener, handler: Arc<Handler>, stop: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let handler = Arc::clone(&handler);
        let spawned = std::thread::Builder::new()
            .name("http-conn".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                if let Err(error) = serve(stream, &*handler) {
                    tracing::debug!(%error, "connection ended");
                }
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "could not start a connection thread");
        }
    }
}

fn serve(stream: TcpStream, handler: &Handler) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(IDLE_TIMEOUT))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let path = parts.next().unwrap_or_default().to_owned();
        let http10 = parts.next() == Some("HTTP/1.0");
        let mut length = 0usize;
        let mut close = http10;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 {
                return Ok(());
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse().context("bad Content-Length")?;
                } else if name.eq_ignore_ascii_case("connection") {
                    close = value.eq_ignore_ascii_case("close");
                }
            }
        }
        let response = if length > MAX_BODY {
            close = true;
            Response::json(413, &serde_json::json!({"error": "request body too large"}))
        } else {
            let mut body = vec![0; length];
            reader.read_exact(&mut body)?;
            handler(&Request { method, path, body })
        };
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {}\r\n",
            response.status,
            reason(response.status),
            response.body.len(),
            if close { "close" } else { "keep-alive" }
        );
        for (name, value) in &response.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        writer.write_all(head.as_bytes())?;
        writer.write_all(&response.body)?;
        if close {
            return Ok(());
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        413 => "Payload Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// The server I/O-bound actions call: answers every request after `delay`.
pub fn delay_server(binds: &[SocketAddr], delay: Duration) -> anyhow::Result<Server> {
    Server::start(
        binds,
        Arc::new(move |_: &Request| {
            std::thread::sleep(delay);
            Response::json(
                200,
                &serde_json::json!({"delayed_ms": delay.as_millis() as u64}),
            )
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Client, ConnMode};

    #[test]
    fn answers_after_the_delay_on_kept_alive_connections() {
        let server =
            delay_server(&["127.0.0.1:0".parse().unwrap()], Duration::from_millis(30)).unwrap();
        let mut client = Client::new(server.addrs[0], ConnMode::KeepAlive);
        for _ in 0..2 {
            let started = std::time::Instant::now();
            let response = client.get("/").unwrap();
            assert_eq!(response.status, 200);
            assert!(started.elapsed() >= Duration::from_millis(30));
            assert!(response.body_text().contains("delayed_ms"));
        }
    }
}

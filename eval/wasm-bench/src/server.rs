//! A small async HTTP/1.1 server for the evaluation's own services (the delay server the
//! I/O-bound actions call, the gateway JMeter drives): tasks on one thread of its own, however
//! many connections wait, keep-alive, `Content-Length` bodies, and an async handler from
//! request to response.

use std::{future::Future, net::SocketAddr, pin::Pin, sync::Arc, time::Duration};

use anyhow::Context;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader},
    net::{TcpListener, TcpStream},
};

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

/// What a handler returns: the response, once it is ready.
pub type Answer = Pin<Box<dyn Future<Output = Response> + Send>>;

pub type Handler = dyn Fn(Request) -> Answer + Send + Sync;

/// A running server; stops, with every connection, when dropped.
pub struct Server {
    pub addrs: Vec<SocketAddr>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Serves `handler` on every address in `binds` (port 0: the kernel's choice, the same
    /// port is then reused for the later addresses).
    pub fn start(binds: &[SocketAddr], handler: Arc<Handler>) -> anyhow::Result<Server> {
        let runtime = crate::runtime::build("http-server")?;
        let mut addrs = Vec::new();
        let mut port = 0;
        for bind in binds {
            let mut bind = *bind;
            if bind.port() == 0 {
                bind.set_port(port);
            }
            let listener = std::net::TcpListener::bind(bind)
                .with_context(|| format!("listening on {bind}"))?;
            listener.set_nonblocking(true)?;
            let addr = listener.local_addr()?;
            port = addr.port();
            addrs.push(addr);
            let listener = {
                let _entered = runtime.enter();
                TcpListener::from_std(listener)?
            };
            runtime.spawn(accept_loop(listener, Arc::clone(&handler)));
        }
        Ok(Server {
            addrs,
            runtime: Some(runtime),
        })
    }

    pub fn port(&self) -> u16 {
        self.addrs[0].port()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(listener: TcpListener, handler: Arc<Handler>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let handler = Arc::clone(&handler);
                tokio::spawn(async move {
                    if let Err(error) = serve(stream, &*handler).await {
                        tracing::debug!(%error, "connection ended");
                    }
                });
            }
            Err(error) => {
                // Out of file descriptors, say: wait a little rather than spin.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Reads one line; `None`: the peer closed, or the connection stayed idle too long.
async fn read_line(
    reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> anyhow::Result<Option<String>> {
    let mut line = String::new();
    match tokio::time::timeout(IDLE_TIMEOUT, reader.read_line(&mut line)).await {
        Err(_) | Ok(Ok(0)) => Ok(None),
        Ok(read) => {
            read?;
            Ok(Some(line))
        }
    }
}

async fn serve(stream: TcpStream, handler: &Handler) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    loop {
        let Some(line) = read_line(&mut reader).await? else {
            return Ok(());
        };
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let path = parts.next().unwrap_or_default().to_owned();
        let http10 = parts.next() == Some("HTTP/1.0");
        let mut length = 0usize;
        let mut close = http10;
        loop {
            let Some(header) = read_line(&mut reader).await? else {
                return Ok(());
            };
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
            reader.read_exact(&mut body).await?;
            handler(Request { method, path, body }).await
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
        writer.write_all(head.as_bytes()).await?;
        writer.write_all(&response.body).await?;
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

/// The server I/O-bound actions call: answers every request after `delay`, holding no thread
/// while it waits.
pub fn delay_server(binds: &[SocketAddr], delay: Duration) -> anyhow::Result<Server> {
    Server::start(
        binds,
        Arc::new(move |_: Request| {
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                Response::json(
                    200,
                    &serde_json::json!({"delayed_ms": delay.as_millis() as u64}),
                )
            })
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
            assert!(response.text().contains("delayed_ms"));
        }
    }

    #[test]
    fn waits_for_many_clients_without_a_thread_each() {
        let server = delay_server(
            &["127.0.0.1:0".parse().unwrap()],
            Duration::from_millis(300),
        )
        .unwrap();
        let addr = server.addrs[0];
        let before = crate::runtime::threads();
        let runtime = crate::runtime::build("test-clients").unwrap();
        let (answers, most_threads) = runtime.block_on(async {
            let mut clients = tokio::task::JoinSet::new();
            for _ in 0..300 {
                clients.spawn(async move { crate::http::post_async(addr, "/", b"{}").await });
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
            let most_threads = crate::runtime::threads();
            let answers = clients.join_all().await;
            (answers, most_threads)
        });
        assert!(answers.iter().all(|a| a.as_ref().unwrap().status == 200));
        // Other tests run beside this one: allow for their threads, not for 300.
        assert!(
            most_threads < before + 64,
            "{most_threads} threads (from {before})"
        );
    }

    #[test]
    fn stops_when_dropped() {
        let server =
            delay_server(&["127.0.0.1:0".parse().unwrap()], Duration::from_millis(1)).unwrap();
        let addr = server.addrs[0];
        drop(server);
        assert!(Client::new(addr, ConnMode::New).get("/").is_err());
    }
}

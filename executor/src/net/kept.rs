//! One container's connections kept open between its GETs: an answered exchange that the server
//! left open goes back here, and the container's next GET to the same origin reuses it instead
//! of connecting again. Never shared between containers (so never between tenants), at most
//! [`MAX_KEPT`] per container, none older than [`KEEP_FOR`], and closed with the container.

use std::{
    sync::{Mutex, PoisonError},
    task::{Context, Poll, Waker},
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
};
use tokio_rustls::client::TlsStream;

/// Idle connections one container keeps; the oldest is closed when another would exceed it.
pub const MAX_KEPT: usize = 2;
/// An idle connection older than this is closed rather than reused.
pub const KEEP_FOR: Duration = Duration::from_secs(60);

/// A connection a GET runs over: plain TCP or TLS on it.
pub trait Connection: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    fn tcp(&self) -> &TcpStream;
}

impl Connection for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Connection for TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// Where a connection leads: the scheme, and the host and port as the URL named them (the
/// address was fixed, and checked against the operator's policy, when it was connected).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub https: bool,
    pub host: String,
    pub port: u16,
}

struct Idle {
    origin: Origin,
    connection: Box<dyn Connection>,
    since: Instant,
}

/// The idle connections of one container.
#[derive(Default)]
pub struct KeptConnections {
    idle: Mutex<Vec<Idle>>,
}

impl KeptConnections {
    /// An idle connection to `origin` that is still open, if the container holds one.
    pub fn take(&self, origin: &Origin) -> Option<Box<dyn Connection>> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.retain(|kept| kept.since.elapsed() < KEEP_FOR);
        while let Some(at) = idle.iter().rposition(|kept| kept.origin == *origin) {
            let kept = idle.remove(at);
            if quiet(kept.connection.tcp()) {
                return Some(kept.connection);
            }
        }
        None
    }

    /// Keeps `connection` for the next GET to `origin`, closing the oldest beyond [`MAX_KEPT`].
    pub fn keep(&self, origin: Origin, connection: Box<dyn Connection>) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() >= MAX_KEPT {
            idle.remove(0);
        }
        idle.push(Idle {
            origin,
            connection,
            since: Instant::now(),
        });
    }

    /// How many idle connections the container holds.
    pub fn len(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Whether an idle connection has nothing to read: a server that closed it (end of stream) or
/// sent something unasked makes it unfit for another request.
fn quiet(tcp: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    let mut buf = ReadBuf::new(&mut byte);
    let mut cx = Context::from_waker(Waker::noop());
    matches!(tcp.poll_peek(&mut cx, &mut buf), Poll::Pending)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::{io::AsyncWriteExt, net::TcpListener};

    fn origin(host: &str) -> Origin {
        Origin {
            https: false,
            host: host.into(),
            port: 80,
        }
    }

    /// A connected pair: the client's end and the server's.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, server)
    }

    #[tokio::test]
    async fn only_open_quiet_connections_to_the_same_origin_come_back() {
        let kept = KeptConnections::default();
        let (open, _open_server) = pair().await;
        let (closed, closed_server) = pair().await;
        let (chatty, mut chatty_server) = pair().await;
        kept.keep(origin("a"), Box::new(open));
        assert!(kept.take(&origin("b")).is_none(), "another origin");
        assert!(kept.take(&origin("a")).is_some());
        assert!(kept.take(&origin("a")).is_none(), "taken once");

        drop(closed_server);
        kept.keep(origin("a"), Box::new(closed));
        chatty_server.write_all(b"unasked").await.unwrap();
        kept.keep(origin("a"), Box::new(chatty));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(kept.take(&origin("a")).is_none(), "closed or not quiet");
        assert_eq!(kept.len(), 0);
    }

    #[tokio::test]
    async fn at_most_max_kept_are_held() {
        let kept = KeptConnections::default();
        let mut servers = Vec::new();
        for host in ["a", "b", "c"] {
            let (client, server) = pair().await;
            servers.push(server);
            kept.keep(origin(host), Box::new(client));
        }
        assert_eq!(kept.len(), MAX_KEPT);
        assert!(kept.take(&origin("a")).is_none(), "the oldest was closed");
        assert!(kept.take(&origin("c")).is_some());
    }
}

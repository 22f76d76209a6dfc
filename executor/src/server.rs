//! Accepts the API's connections and keeps answering whatever clients do: a connection must
//! send each request's complete header within the header timeout (which also ends idle
//! kept-alive connections), the number of open connections is capped below the descriptor
//! limit, and at the cap a new connection takes the place of the oldest idle one (those that
//! never carried an accepted request first); only when every connection is busy is a newcomer
//! answered 503 at once. Accept errors (no descriptor left) shed an idle connection and go on.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{Router, body::Body, extract::Request, http::StatusCode};
use futures_util::FutureExt;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt},
    sync::{Notify, watch},
};
use tower_service::Service;

use crate::{connection_threads::ConnectionThreads, lingering::Lingering};

/// How the server treats its connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Longest wait for a request's complete header, from the connection's start or the end of
    /// the previous answer.
    pub header_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

/// What a newcomer gets when every connection is busy.
const BUSY_ANSWER: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
retry-after: 1\r\nconnection: close\r\ncontent-length: 77\r\n\r\n\
{\"error\":\"the executor serves as many connections as it may; retry elsewhere\"}";

/// Pause after an accept error, so that a process out of descriptors does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(5);

/// The open connections, by age.
#[derive(Default)]
struct Connections {
    open: Mutex<BTreeMap<u64, Arc<ConnectionState>>>,
    next_id: AtomicUsize,
    /// Signalled when the last connection closes.
    drained: Notify,
}

/// One connection as the shedding sees it.
#[derive(Default)]
struct ConnectionState {
    /// Requests in progress (between a complete header and the answer).
    busy: AtomicUsize,
    /// A request on it was answered with something other than a refusal of the client.
    trusted: AtomicBool,
    /// Notified to close the connection at once.
    shed: Notify,
}

impl Connections {
    fn register(&self) -> (u64, Arc<ConnectionState>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) as u64;
        let state = Arc::new(ConnectionState::default());
        self.lock().insert(id, Arc::clone(&state));
        (id, state)
    }

    fn remove(&self, id: u64) {
        let mut open = self.lock();
        open.remove(&id);
        if open.is_empty() {
            self.drained.notify_waiters();
        }
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    /// Closes the oldest idle connection, preferring those never trusted, and stops counting
    /// it; false if every connection is busy.
    fn shed_one(&self) -> bool {
        let mut open = self.lock();
        let idle = |trusted: bool| {
            open.iter()
                .find(|(_, c)| {
                    c.busy.load(Ordering::Acquire) == 0
                        && c.trusted.load(Ordering::Relaxed) == trusted
                })
                .map(|(id, _)| *id)
        };
        let Some(victim) = idle(false).or_else(|| idle(true)) else {
            return false;
        };
        if let Some(victim) = open.remove(&victim) {
            victim.shed.notify_one();
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<ConnectionState>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A listening socket the server takes its connections from.
pub trait Listener: Send + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&self) -> impl Future<Output = std::io::Result<Self::Io>> + Send;
    /// The connection moved to the runtime of the calling thread (a connection thread's own).
    fn move_here(io: Self::Io) -> std::io::Result<Self::Io>;
}

impl Listener for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    async fn accept(&self) -> std::io::Result<Self::Io> {
        let (stream, _) = tokio::net::TcpListener::accept(self).await?;
        // Answers are written whole: no waiting for the client's acknowledgement of the last.
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    fn move_here(io: Self::Io) -> std::io::Result<Self::Io> {
        tokio::net::TcpStream::from_std(io.into_std()?)
    }
}

impl Listener for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;

    async fn accept(&self) -> std::io::Result<Self::Io> {
        tokio::net::UnixListener::accept(self)
            .await
            .map(|(stream, _)| stream)
    }

    fn move_here(io: Self::Io) -> std::io::Result<Self::Io> {
        tokio::net::UnixStream::from_std(io.into_std()?)
    }
}

/// What the server answers, and on which threads.
pub struct Server {
    pub router: Router,
    pub limits: ConnectionLimits,
    /// With threads, a connection is served on a thread of its own while one is free.
    pub threads: Option<Arc<ConnectionThreads>>,
}

/// Serves the router on the connections of `listener` until `shutdown` completes, then lets
/// the requests in progress finish.
pub async fn serve<L: Listener>(listener: L, server: Server, shutdown: impl Future<Output = ()>) {
    let Server {
        router,
        limits,
        threads,
    } = server;
    let connections = Arc::new(Connections::default());
    let (stop, stopping) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let io = match accepted {
            Ok(io) => io,
            Err(error) => {
                // Out of descriptors: make room and go on answering. Anything else (a
                // connection reset before it was accepted) concerns that connection alone.
                if matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                    tracing::warn!(%error, "no descriptor for a new connection: closing an idle one");
                    connections.shed_one();
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                } else {
                    tracing::debug!(%error, "accepting a connection failed");
                }
                continue;
            }
        };
        if connections.len() >= limits.max_connections && !connections.shed_one() {
            tokio::spawn(turn_away(io));
            continue;
        }
        let (id, state) = connections.register();
        let end = ConnectionEnd(Arc::clone(&connections), id);
        let connection = {
            let (router, stopping) = (router.clone(), stopping.clone());
            move |io| serve_connection(io, router, limits, state, stopping, end)
        };
        match threads.as_ref().and_then(ConnectionThreads::reserve) {
            Some(thread) => thread.serve(move || async move {
                match L::move_here(io) {
                    Ok(io) => connection(io).await,
                    Err(error) => {
                        tracing::debug!(%error, "moving a connection to its thread failed");
                    }
                }
            }),
            None => {
                tokio::spawn(connection(io));
            }
        }
    }
    let _ = stop.send(true);
    let drained = connections.drained.notified();
    if connections.len() > 0 {
        drained.await;
    }
}

/// Removes its connection from the open ones when the connection's task ends, however it ends.
struct ConnectionEnd(Arc<Connections>, u64);

impl Drop for ConnectionEnd {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// Answers 503 to a connection there is no room for, without reading its request.
async fn turn_away<Io: AsyncWrite + Unpin>(mut io: Io) {
    let answered = tokio::time::timeout(Duration::from_secs(1), async {
        io.write_all(BUSY_ANSWER).await?;
        io.shutdown().await
    });
    let _ = answered.await;
}

async fn serve_connection<Io>(
    io: Io,
    router: Router,
    limits: ConnectionLimits,
    state: Arc<ConnectionState>,
    mut stopping: watch::Receiver<bool>,
    _end: ConnectionEnd,
) where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(Tracked {
        router,
        state: Arc::clone(&state),
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(Lingering::new(io)), service);
    tokio::pin!(connection);
    let shed = state.shed.notified();
    tokio::pin!(shed);
    let stopped = async move {
        let _ = stopping.wait_for(|stop| *stop).await;
    };
    tokio::select! {
        result = connection.as_mut() => log_end(result),
        () = &mut shed => {
            tracing::debug!("closing an idle connection to make room");
        }
        () = stopped => {
            connection.as_mut().graceful_shutdown();
            log_end(connection.await);
        }
    }
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(error) = result {
        tracing::debug!(%error, "connection ended");
    }
}

/// The router, counting the requests in progress on its connection and noting whether one
/// was accepted.
#[derive(Clone)]
struct Tracked {
    router: Router,
    state: Arc<ConnectionState>,
}

impl Service<Request<hyper::body::Incoming>> for Tracked {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = futures_util::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<hyper::body::Incoming>) -> Self::Future {
        let state = Arc::clone(&self.state);
        state.busy.fetch_add(1, Ordering::AcqRel);
        let busy = BusyGuard(Arc::clone(&state));
        let answer = self.router.call(request.map(Body::new));
        answer
            .map(move |result| {
                if let Ok(response) = &result
                    && !refuses_the_client(response.status())
                {
                    state.trusted.store(true, Ordering::Relaxed);
                }
                drop(busy);
                result
            })
            .boxed()
    }
}

/// Marks a request no longer in progress, also when its task is dropped.
struct BusyGuard(Arc<ConnectionState>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Answers that say the client was not let in.
fn refuses_the_client(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::UNAUTHORIZED
            | StatusCode::FORBIDDEN
            | StatusCode::REQUEST_TIMEOUT
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::UNSUPPORTED_MEDIA_TYPE
    )
}

/// Raises the soft descriptor limit to the hard one; returns the limit in force.
pub fn raise_descriptor_limit() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => limit = raised,
            Err(error) => tracing::warn!(%error, soft, "cannot raise the descriptor limit"),
        }
    }
    limit.current.unwrap_or(u64::MAX)
}

/// The connections allowed by default: half the descriptors, the other half left to guests'
/// files, sockets and the module cache.
pub fn default_max_connections(descriptors: u64) -> usize {
    usize::try_from(descriptors / 2)
        .unwrap_or(usize::MAX)
        .clamp(16, 65_536)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shedding_takes_the_oldest_idle_untrusted_connection_first() {
        let connections = Connections::default();
        let (_, busy) = connections.register();
        busy.busy.store(1, Ordering::Relaxed);
        let (_, trusted) = connections.register();
        trusted.trusted.store(true, Ordering::Relaxed);
        let (_, stranger) = connections.register();
        let (_, younger) = connections.register();
        let notified = |c: &Arc<ConnectionState>| c.shed.notified().now_or_never().is_some();
        assert!(connections.shed_one());
        assert!(notified(&stranger) && !notified(&younger) && !notified(&trusted));
        assert_eq!(
            connections.len(),
            3,
            "a shed connection is no longer counted"
        );
        assert!(connections.shed_one());
        assert!(notified(&younger));
        assert!(connections.shed_one());
        assert!(notified(&trusted), "then the idle trusted one");
        assert!(!connections.shed_one(), "never a busy one");
        assert!(!notified(&busy));
        assert_eq!(connections.len(), 1);
    }

    #[test]
    fn connections_get_half_the_descriptors() {
        assert_eq!(default_max_connections(4096), 2048);
        assert_eq!(default_max_connections(20), 16);
        assert_eq!(default_max_connections(u64::MAX), 65_536);
    }
}

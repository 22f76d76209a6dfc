//! Closes a connection so that its client can read the last answer: the answer is followed by
//! the end of the stream, and what the client is still sending (the body of a request answered
//! before it was read: a 401, 403, 408, 413, 415 or 503) is read and dropped for a while.
//! Closing a socket with unread input makes the kernel reset the connection, and a client still
//! writing its body then sees a broken pipe instead of the answer.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::Sleep,
};

/// How long a closing connection keeps reading what its client still sends.
pub const LINGER: Duration = Duration::from_secs(2);

/// An I/O stream whose shutdown lingers: it sends the end of the stream, then reads and drops
/// input until the client closes its side, an error, or [`LINGER`] has passed.
pub struct Lingering<Io> {
    io: Io,
    /// Set once the end of the stream has been sent: when draining stops at the latest.
    until: Option<Pin<Box<Sleep>>>,
}

impl<Io> Lingering<Io> {
    pub fn new(io: Io) -> Self {
        Lingering { io, until: None }
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Lingering<Io> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<Io: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Lingering<Io> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.until.is_none() {
            ready!(Pin::new(&mut self.io).poll_shutdown(cx))?;
            self.until = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let mut scratch = [0u8; 8192];
        loop {
            if let Some(until) = self.until.as_mut()
                && until.as_mut().poll(cx).is_ready()
            {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => continue,
                // The client is gone: nothing left to protect.
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_client_reads_the_answer_while_it_is_still_sending() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let mut server = Lingering::new(server);
        let sender = tokio::spawn(async move {
            // A body far larger than any buffer between the two ends.
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..64 {
                if client_write.write_all(&chunk).await.is_err() {
                    return false;
                }
            }
            client_write.shutdown().await.is_ok()
        });
        server
            .write_all(b"HTTP/1.1 401 Unauthorized\r\n\r\n")
            .await
            .unwrap();
        server.shutdown().await.unwrap();
        let mut answer = String::new();
        client_read.read_to_string(&mut answer).await.unwrap();
        assert_eq!(answer, "HTTP/1.1 401 Unauthorized\r\n\r\n");
        assert!(sender.await.unwrap(), "the client's body was not drained");
    }

    #[tokio::test]
    async fn a_client_that_never_stops_sending_is_cut_off() {
        let (client, server) = tokio::io::duplex(1024);
        let mut server = Lingering::new(server);
        let (_client_read, mut client_write) = tokio::io::split(client);
        tokio::spawn(async move { while client_write.write_all(&[0u8; 512]).await.is_ok() {} });
        let closed = tokio::time::timeout(LINGER * 5, server.shutdown()).await;
        assert!(matches!(closed, Ok(Ok(()))), "the shutdown never ended");
    }
}

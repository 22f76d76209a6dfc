//! The guest's HTTP import (`openwhisk::http_get`, `openwhisk::http_read`) as every backend
//! offers it: the URL's bound, what the guest is told of a request, the held response and its
//! reading in chunks, and the faults that stop the guest. The backends only move bytes between
//! guest memory and these calls, and run the request ([`crate::net::HttpGetter`]) without the
//! guest's CPU slot.

use thiserror::Error;

use crate::net::{HttpGetError, HttpResponse, code};

/// Longest URL a guest may pass.
pub const MAX_URL_BYTES: u32 = 8192;

/// The twins of `http_get` and `http_read` that every module may import: in a container
/// without `net_access` a GET through them answers NOT_PERMITTED (with [`NOT_GRANTED`] to
/// read), where a module importing `http_get` is refused at /init. The language engines use
/// them: one engine serves actions with and without the capability.
pub const TRY_GET: &str = "http_try_get";
pub const TRY_READ: &str = "http_try_read";
/// What a GET through [`TRY_GET`] reads in a container without `net_access`.
pub const NOT_GRANTED: &str = "this action may not make HTTP requests: it needs the annotation net_access, which the operator allows per namespace";

/// Which of the two pairs a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    /// `http_get`/`http_read`: the capability's, linked only with it.
    Capability,
    /// `http_try_get`/`http_try_read`: linked for every module.
    Twin,
}

/// A GET in a container without `net_access`: the twins answer, the capability's pair
/// cannot have been linked (a fault, should it happen).
pub fn without_grant(pair: Pair) -> Result<Result<HttpResponse, HttpGetError>, HttpImportFault> {
    match pair {
        Pair::Twin => Ok(Err(HttpGetError::NotPermitted(NOT_GRANTED.into()))),
        Pair::Capability => Err(HttpImportFault::NoCapability),
    }
}

/// Why the guest is stopped instead of answered: its trap's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum HttpImportFault {
    #[error("http_get without net_access")]
    NoCapability,
    #[error("http_get: URL longer than {MAX_URL_BYTES} bytes")]
    UrlTooLong,
    #[error("http_get: URL out of bounds")]
    UrlOutOfBounds,
    #[error("http_get: status or length pointer out of bounds")]
    ReplyOutOfBounds,
    #[error("http_get: the body is longer than a 32-bit length can say")]
    BodyTooLong,
    #[error("http_read: buffer out of bounds")]
    BufferOutOfBounds,
    #[error("the module exports no memory")]
    NoMemory,
}

/// Checks the URL's length before it is read from guest memory.
pub fn check_url_len(len: u32) -> Result<(), HttpImportFault> {
    if len > MAX_URL_BYTES {
        return Err(HttpImportFault::UrlTooLong);
    }
    Ok(())
}

/// The URL a guest passed; bytes that are not UTF-8 are replaced (the request then fails on
/// the URL, as the guest would expect of a malformed one).
pub fn url_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What `http_get` returns and writes for the guest: its result code, the HTTP status (0 when
/// the request failed) and the length of the body it may then read (or of the error's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetReply {
    pub result: i32,
    pub status: u32,
    pub body_len: u32,
}

/// A response (or error text) waiting for the guest to read it with `http_read`.
#[derive(Debug, Default)]
pub struct HeldBody {
    bytes: Vec<u8>,
    read: usize,
}

impl HeldBody {
    /// Holds what a GET gave, the response's body or the error's text (replacing anything
    /// unread), and says what the guest is told.
    pub fn hold(
        &mut self,
        fetched: Result<HttpResponse, HttpGetError>,
    ) -> Result<GetReply, HttpImportFault> {
        let (result, status, bytes) = match fetched {
            Ok(response) => (code::OK, u32::from(response.status), response.body),
            Err(error) => (error.code(), 0, error.to_string().into_bytes()),
        };
        let body_len = u32::try_from(bytes.len()).map_err(|_| HttpImportFault::BodyTooLong)?;
        *self = HeldBody { bytes, read: 0 };
        Ok(GetReply {
            result,
            status,
            body_len,
        })
    }

    /// The next part of the body for a buffer of `capacity` bytes (empty once all was read).
    pub fn next_chunk(&self, capacity: u32) -> &[u8] {
        let chunk = (self.bytes.len() - self.read)
            .min(capacity as usize)
            .min(i32::MAX as usize);
        &self.bytes[self.read..self.read + chunk]
    }

    /// Marks the chunk [`HeldBody::next_chunk`] gave as written to the guest; a body read in
    /// full is dropped. Returns `http_read`'s result, the chunk's length.
    pub fn consume(&mut self, chunk: usize) -> i32 {
        self.read = (self.read + chunk).min(self.bytes.len());
        if self.read == self.bytes.len() {
            *self = HeldBody::default();
        }
        // A chunk is at most i32::MAX bytes (next_chunk).
        i32::try_from(chunk).unwrap_or(i32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_read_in_chunks_then_gone() {
        let mut held = HeldBody::default();
        let reply = held
            .hold(Ok(HttpResponse {
                status: 200,
                body: b"hello world".to_vec(),
            }))
            .unwrap();
        assert_eq!(
            reply,
            GetReply {
                result: code::OK,
                status: 200,
                body_len: 11
            }
        );
        assert_eq!(held.next_chunk(4), b"hell");
        assert_eq!(held.consume(4), 4);
        assert_eq!(held.next_chunk(100), b"o world");
        assert_eq!(held.consume(7), 7);
        assert_eq!(held.next_chunk(100), b"");
        assert!(held.bytes.is_empty(), "a body read in full is dropped");
    }

    #[test]
    fn a_failed_request_holds_its_text_and_says_its_code() {
        let mut held = HeldBody::default();
        let reply = held
            .hold(Err(HttpGetError::NotPermitted("not allowed".into())))
            .unwrap();
        assert_eq!(reply.result, code::NOT_PERMITTED);
        assert_eq!(reply.status, 0);
        assert_eq!(held.next_chunk(100), b"not allowed");
    }

    #[test]
    fn urls_are_bounded_before_they_are_read() {
        assert_eq!(check_url_len(MAX_URL_BYTES), Ok(()));
        assert_eq!(
            check_url_len(MAX_URL_BYTES + 1),
            Err(HttpImportFault::UrlTooLong)
        );
        assert_eq!(url_text(b"http://a/\xff"), "http://a/\u{fffd}");
    }
}

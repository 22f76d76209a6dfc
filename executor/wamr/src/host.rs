//! The host side of one activation, as WAMR's native functions see it: where the guest's
//! stdout/stderr go, the HTTP GET capability, the CPU slot given back while the guest waits,
//! and what the memory-growth callback observed.
//! It lives on the worker's stack for the duration of the run and is only touched from that
//! thread (WAMR calls natives on the thread running the guest), hence `Cell`/`RefCell`.

use std::{
    cell::{Cell, RefCell},
    sync::Arc,
    time::Instant,
};

use wasm_executor::{
    backend::{
        http_import::{self, GetReply, HeldBody, HttpImportFault, Pair},
        opened::OpenedDescriptors,
    },
    logs::{OutputCapture, Stream},
    net::HttpGetter,
    pool::CpuSlot,
};

/// Wasm page size.
const PAGE_BYTES: u64 = 65_536;

pub struct HostState {
    output: Arc<OutputCapture>,
    net: Option<Arc<HttpGetter>>,
    deadline: Instant,
    memory_limit_bytes: u64,
    memory_exceeded: Cell<bool>,
    held: RefCell<HeldBody>,
    cpu: RefCell<CpuSlot>,
    /// The descriptors the guest opened and still holds.
    opened: RefCell<OpenedDescriptors>,
}

impl HostState {
    pub fn new(
        output: Arc<OutputCapture>,
        net: Option<Arc<HttpGetter>>,
        deadline: Instant,
        memory_limit_bytes: u64,
        cpu: CpuSlot,
    ) -> Self {
        HostState {
            output,
            net,
            deadline,
            memory_limit_bytes,
            memory_exceeded: Cell::new(false),
            held: RefCell::new(HeldBody::default()),
            cpu: RefCell::new(cpu),
            opened: RefCell::new(OpenedDescriptors::default()),
        }
    }

    /// Runs a blocking `wait` (a sleep, a request) without the guest's CPU slot.
    pub fn off_cpu<R>(&self, wait: impl FnOnce() -> R) -> R {
        self.cpu.borrow_mut().released_while(self.deadline, wait)
    }

    /// Bytes the guest wrote to its stdout (fd 1) or stderr (fd 2).
    pub fn write_output(&self, fd: u32, bytes: &[u8]) {
        let stream = if fd == 1 {
            Stream::Stdout
        } else {
            Stream::Stderr
        };
        self.output.write(stream, bytes);
    }

    /// The descriptors the guest opened and holds.
    pub fn opened(&self) -> std::cell::RefMut<'_, OpenedDescriptors> {
        self.opened.borrow_mut()
    }

    /// Whether the activation's time is up.
    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    pub fn has_net(&self) -> bool {
        self.net.is_some()
    }

    /// Performs the GET (bounded by the activation's deadline) and holds the body for
    /// `http_read`; without `net_access`, what `pair` answers then.
    pub fn http_get(&self, url: &str, pair: Pair) -> Result<GetReply, HttpImportFault> {
        let fetched = match self.net.as_ref() {
            Some(getter) => self.off_cpu(|| getter.get_blocking(url, self.deadline)),
            None => http_import::without_grant(pair)?,
        };
        self.held.borrow_mut().hold(fetched)
    }

    /// Copies the next part of the held body into `buf`; returns how many bytes.
    pub fn http_read(&self, buf: &mut [u8]) -> i32 {
        let mut held = self.held.borrow_mut();
        let chunk = held.next_chunk(u32::try_from(buf.len()).unwrap_or(u32::MAX));
        let written = chunk.len();
        buf[..written].copy_from_slice(chunk);
        held.consume(written)
    }

    /// Called when WAMR refused to grow linear memory from `current_bytes` by `pages`.
    pub fn memory_growth_refused(&self, current_bytes: u64, pages: u32) {
        if current_bytes.saturating_add(u64::from(pages) * PAGE_BYTES) > self.memory_limit_bytes {
            self.memory_exceeded.set(true);
        }
    }

    /// True once a growth beyond the container's limit was refused.
    pub fn memory_exceeded(&self) -> bool {
        self.memory_exceeded.get()
    }

    /// The container's limit in pages, for WAMR's maximum.
    pub fn memory_limit_pages(&self) -> u32 {
        u32::try_from(self.memory_limit_bytes / PAGE_BYTES)
            .unwrap_or(u32::MAX)
            .max(1)
    }

    pub fn memory_limit_bytes(&self) -> u64 {
        self.memory_limit_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_held_body_is_read_into_guest_buffers() {
        let host = HostState::new(
            OutputCapture::new(1024, 1024),
            None,
            Instant::now(),
            1 << 20,
            CpuSlot::detached(),
        );
        host.held
            .borrow_mut()
            .hold(Ok(wasm_executor::net::HttpResponse {
                status: 200,
                body: b"hello world".to_vec(),
            }))
            .unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(host.http_read(&mut buf), 4);
        assert_eq!(&buf, b"hell");
        let mut rest = [0u8; 64];
        assert_eq!(host.http_read(&mut rest), 7);
        assert_eq!(&rest[..7], b"o world");
        assert_eq!(host.http_read(&mut rest), 0);
        assert_eq!(
            host.http_get("http://example.com/", Pair::Capability),
            Err(HttpImportFault::NoCapability),
            "no capability, no request"
        );
        let reply = host.http_get("http://example.com/", Pair::Twin).unwrap();
        assert_eq!(reply.result, wasm_executor::net::code::NOT_PERMITTED);
        let mut text = vec![0u8; reply.body_len as usize];
        host.http_read(&mut text);
        assert_eq!(text, http_import::NOT_GRANTED.as_bytes());
    }

    #[test]
    fn only_growth_beyond_the_limit_counts_as_exhaustion() {
        let host = HostState::new(
            OutputCapture::new(1024, 1024),
            None,
            Instant::now(),
            4 * PAGE_BYTES,
            CpuSlot::detached(),
        );
        host.memory_growth_refused(2 * PAGE_BYTES, 1);
        assert!(
            !host.memory_exceeded(),
            "refused for another reason (the module's own maximum)"
        );
        host.memory_growth_refused(2 * PAGE_BYTES, 3);
        assert!(host.memory_exceeded());
        assert_eq!(host.memory_limit_pages(), 4);
    }
}

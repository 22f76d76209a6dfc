//! Fuzz target: the arguments wasmer's WASI reads from a guest's memory (paths, iovec arrays,
//! gathered and scattered buffers, `poll_oneoff` subscriptions), with hostile pointers and
//! lengths against a memory of hostile contents.

#![no_main]

use std::{cell::RefCell, time::Instant};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use wasm_executor_fuzz::{
    guest::{Guest, LinearMemory, OutOfBounds, capacity},
    host_limits::MAX_IO_BYTES,
    poll,
};

/// A guest memory of the fuzzer's bytes.
struct Memory(RefCell<Vec<u8>>);

impl LinearMemory for Memory {
    fn read(&self, at: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        let memory = self.0.borrow();
        let at = usize::try_from(at).map_err(|_| OutOfBounds)?;
        let end = at.checked_add(buf.len()).ok_or(OutOfBounds)?;
        buf.copy_from_slice(memory.get(at..end).ok_or(OutOfBounds)?);
        Ok(())
    }

    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), OutOfBounds> {
        let mut memory = self.0.borrow_mut();
        let at = usize::try_from(at).map_err(|_| OutOfBounds)?;
        let end = at.checked_add(bytes.len()).ok_or(OutOfBounds)?;
        memory
            .get_mut(at..end)
            .ok_or(OutOfBounds)?
            .copy_from_slice(bytes);
        Ok(())
    }
}

#[derive(Arbitrary, Debug)]
enum Call {
    Path {
        ptr: u32,
        len: u32,
    },
    Iovecs {
        iovs: u32,
        count: u32,
    },
    Gather {
        iovs: u32,
        count: u32,
    },
    Scatter {
        iovs: u32,
        count: u32,
        data: Vec<u8>,
    },
    Subscription {
        ptr: u32,
        clock_ns: u64,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    memory: Vec<u8>,
    calls: Vec<Call>,
}

fuzz_target!(|input: Input| {
    let memory = Memory(RefCell::new(input.memory));
    let guest = Guest::new(&memory);
    for call in input.calls {
        match call {
            Call::Path { ptr, len } => {
                if let Ok(path) = guest.read_path(ptr, len) {
                    assert_eq!(path.len(), len as usize);
                    assert!(len <= 4096);
                }
            }
            Call::Iovecs { iovs, count } => {
                if let Ok(list) = guest.iovecs(iovs, count) {
                    assert_eq!(list.len(), count as usize);
                    assert!(capacity(&list) <= MAX_IO_BYTES as usize);
                }
            }
            Call::Gather { iovs, count } => {
                if let Ok(bytes) = guest.gather(iovs, count) {
                    let list = guest.iovecs(iovs, count).unwrap();
                    assert_eq!(bytes.len(), capacity(&list));
                }
            }
            Call::Scatter { iovs, count, data } => {
                let Ok(list) = guest.iovecs(iovs, count) else {
                    continue;
                };
                if let Ok(placed) = guest.scatter(&list, &data) {
                    assert_eq!(placed, data.len().min(capacity(&list)));
                }
            }
            Call::Subscription { ptr, clock_ns } => {
                let Ok(raw) = guest.read_bytes(ptr, poll::SUBSCRIPTION_SIZE) else {
                    continue;
                };
                let now = Instant::now();
                let clock = |id: u32| (id <= 3).then_some(clock_ns);
                if let Ok(sub) = poll::parse(&raw, now, clock) {
                    assert_eq!(sub.kind == poll::CLOCK, sub.due.is_some());
                    let event = poll::event(&sub, 0);
                    assert_eq!(event.len(), poll::EVENT_SIZE as usize);
                }
            }
        }
    }
});

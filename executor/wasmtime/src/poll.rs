//! `poll_oneoff` in place of wasmtime-wasi's: a sleeping guest is suspended on a timer, without
//! its CPU slot, where epoch interruption cannot reach it, so the wait itself must end at the
//! activation's deadline: subscriptions are decoded and judged by the shared implementation
//! (`executor/decode/src/poll.rs`), and a wait that reaches the deadline ends the activation as timed out.
//! The guest's monotonic clock is [`GuestMonotonicClock`], so absolute timeouts mean what the
//! guest read.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wasmtime::{Caller, Extern, Linker, Trap};
use wasmtime_wasi::HostMonotonicClock;

use super::RunState;
use wasm_executor::backend::poll::{
    self, ERRNO_INVAL, EVENT_SIZE, MAX_SUBSCRIPTIONS, SUBSCRIPTION_SIZE,
};

/// WASI's `EFAULT`: a pointer outside the guest's memory.
const ERRNO_FAULT: i32 = 21;

/// The guest's monotonic clock: nanoseconds since the activation's store was made.
pub struct GuestMonotonicClock {
    pub origin: Instant,
}

impl HostMonotonicClock for GuestMonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Replaces wasmtime-wasi's `poll_oneoff` (added to `linker` before) with this one.
pub fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap_async(
        "wasi_snapshot_preview1",
        "poll_oneoff",
        |caller: Caller<'_, RunState>, (subs, events, count, out): (u32, u32, u32, u32)| {
            Box::new(poll_oneoff(caller, subs, events, count, out))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

async fn poll_oneoff(
    mut caller: Caller<'_, RunState>,
    subs: u32,
    events: u32,
    count: u32,
    out: u32,
) -> wasmtime::Result<i32> {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else {
        return Ok(i32::from(ERRNO_INVAL));
    };
    if count == 0 || count > MAX_SUBSCRIPTIONS {
        return Ok(i32::from(ERRNO_INVAL));
    }
    let (origin, deadline) = (caller.data().clock_origin, caller.data().deadline);
    let clock_now_ns = |id: u32| match id {
        0 => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()
            .and_then(|d| u64::try_from(d.as_nanos()).ok()),
        1 => Some(GuestMonotonicClock { origin }.now()),
        _ => None,
    };
    let now = Instant::now();
    let mut parsed = Vec::with_capacity(count as usize);
    {
        let data = memory.data(&caller);
        for i in 0..count {
            let Some(raw) = slice(data, subs, i, SUBSCRIPTION_SIZE) else {
                return Ok(ERRNO_FAULT);
            };
            match poll::parse(raw, now, clock_now_ns) {
                Ok(sub) => parsed.push(sub),
                Err(errno) => return Ok(i32::from(errno)),
            }
        }
    }
    let at = match poll::wake_up(&parsed, deadline) {
        poll::WakeUp::Now => Instant::now(),
        poll::WakeUp::At(at) => {
            let timer = tokio::time::sleep_until(at.into());
            caller.data_mut().off_cpu(timer).await;
            Instant::now()
        }
        poll::WakeUp::Deadline(at) => {
            let timer = tokio::time::sleep_until(at.into());
            caller.data_mut().off_cpu(timer).await;
            return Err(Trap::Interrupt.into());
        }
    };
    let data = memory.data_mut(&mut caller);
    let mut written = 0u32;
    for sub in parsed.iter().filter(|s| poll::fired(s, &parsed, at)) {
        let Some(target) = slice_mut(data, events, written, EVENT_SIZE) else {
            return Ok(ERRNO_FAULT);
        };
        target.copy_from_slice(&poll::event(sub, 0));
        written += 1;
    }
    let Some(target) = slice_mut(data, out, 0, 4) else {
        return Ok(ERRNO_FAULT);
    };
    target.copy_from_slice(&written.to_le_bytes());
    Ok(0)
}

/// Element `index` (of `size` bytes) of the guest array at `base`, if it is inside memory.
fn slice(data: &[u8], base: u32, index: u32, size: u32) -> Option<&[u8]> {
    let start = usize::try_from(index.checked_mul(size)?.checked_add(base)?).ok()?;
    data.get(start..start.checked_add(size as usize)?)
}

fn slice_mut(data: &mut [u8], base: u32, index: u32, size: u32) -> Option<&mut [u8]> {
    let start = usize::try_from(index.checked_mul(size)?.checked_add(base)?).ok()?;
    data.get_mut(start..start.checked_add(size as usize)?)
}

//! Arguments, environment, clocks, randomness, `poll_oneoff`, and the functions a sandboxed
//! action has no use for (signals, sockets), which answer as unsupported.

use std::{
    sync::LazyLock,
    time::{Instant, SystemTime, UNIX_EPOCH},
};

use rand::RngCore;

use super::{
    WasiCall,
    abi::{Errno, WasiResult, clock},
    fds::Descriptor,
};
use wasm_executor::backend::{host_limits::RANDOM_CHUNK, poll};

/// The origin of the monotonic clock: the first time any guest asks.
static MONOTONIC_ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// The address of element `index` of a guest array at `base`; overflow is a bad pointer.
fn offset(base: u32, index: u32, size: u32) -> WasiResult<u32> {
    index
        .checked_mul(size)
        .and_then(|o| base.checked_add(o))
        .ok_or(Errno::FAULT)
}

/// Writes NUL-terminated `items` into `buf` and their addresses into `list`.
fn write_strings(call: &mut WasiCall<'_>, items: &[String], list: u32, buf: u32) -> WasiResult<()> {
    let mut at = buf;
    for (i, item) in items.iter().enumerate() {
        call.guest.write_u32(offset(list, i as u32, 4)?, at)?;
        let mut bytes = item.as_bytes().to_vec();
        bytes.push(0);
        call.guest.write_bytes(at, &bytes)?;
        at = at.checked_add(bytes.len() as u32).ok_or(Errno::FAULT)?;
    }
    Ok(())
}

fn write_sizes(call: &mut WasiCall<'_>, items: &[String], count: u32, size: u32) -> WasiResult<()> {
    let bytes: usize = items.iter().map(|s| s.len() + 1).sum();
    call.guest.write_u32(count, items.len() as u32)?;
    call.guest
        .write_u32(size, u32::try_from(bytes).map_err(|_| Errno::OVERFLOW)?)
}

pub fn args_get(call: &mut WasiCall<'_>, argv: u32, buf: u32) -> WasiResult<()> {
    let args = call.ctx.args.clone();
    write_strings(call, &args, argv, buf)
}

pub fn args_sizes_get(call: &mut WasiCall<'_>, count: u32, size: u32) -> WasiResult<()> {
    let args = call.ctx.args.clone();
    write_sizes(call, &args, count, size)
}

pub fn environ_get(call: &mut WasiCall<'_>, environ: u32, buf: u32) -> WasiResult<()> {
    let env = call.ctx.env.clone();
    write_strings(call, &env, environ, buf)
}

pub fn environ_sizes_get(call: &mut WasiCall<'_>, count: u32, size: u32) -> WasiResult<()> {
    let env = call.ctx.env.clone();
    write_sizes(call, &env, count, size)
}

fn now_ns(id: u32) -> WasiResult<u64> {
    let ns = match id {
        clock::REALTIME => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| Errno::INVAL)?
            .as_nanos(),
        // CPU-time clocks are served by the monotonic one: an activation runs on one thread
        // and wall time is an upper bound of its CPU time.
        clock::MONOTONIC | clock::PROCESS_CPUTIME | clock::THREAD_CPUTIME => {
            MONOTONIC_ORIGIN.elapsed().as_nanos()
        }
        _ => return Err(Errno::INVAL),
    };
    u64::try_from(ns).map_err(|_| Errno::OVERFLOW)
}

pub fn clock_res_get(call: &mut WasiCall<'_>, id: u32, out: u32) -> WasiResult<()> {
    now_ns(id)?;
    call.guest.write_u64(out, 1)
}

pub fn clock_time_get(
    call: &mut WasiCall<'_>,
    id: u32,
    _precision: u64,
    out: u32,
) -> WasiResult<()> {
    let ns = now_ns(id)?;
    call.guest.write_u64(out, ns)
}

/// Fills the buffer a chunk at a time; past the deadline it stops (the call's guard then ends
/// the activation), so a gigabyte holds the thread no longer than the activation's limit.
pub fn random_get(
    call: &mut WasiCall<'_>,
    deadline: Instant,
    buf: u32,
    len: u32,
) -> WasiResult<()> {
    const CHUNK: u32 = RANDOM_CHUNK as u32;
    let mut rng = rand::thread_rng();
    let mut chunk = vec![0u8; CHUNK.min(len) as usize];
    let mut done = 0;
    while done < len {
        if done > 0 && Instant::now() >= deadline {
            return Ok(());
        }
        let n = CHUNK.min(len - done) as usize;
        rng.fill_bytes(&mut chunk[..n]);
        call.guest
            .write_bytes(buf.checked_add(done).ok_or(Errno::FAULT)?, &chunk[..n])?;
        done += n as u32;
    }
    Ok(())
}

pub fn sched_yield(_cx: &mut WasiCall<'_>) -> WasiResult<()> {
    std::thread::yield_now();
    Ok(())
}

/// `poll_oneoff` on the shared implementation (`executor/decode/src/poll.rs`): clocks are waited for
/// without the guest's CPU slot, never past the deadline (the host-call guard then ends the
/// activation); descriptors are ready at once, stdin with the bytes it has left.
pub fn poll_oneoff(
    call: &mut WasiCall<'_>,
    deadline: Instant,
    subs: u32,
    events: u32,
    count: u32,
    out: u32,
) -> WasiResult<()> {
    if count == 0 || count > poll::MAX_SUBSCRIPTIONS {
        return Err(Errno::INVAL);
    }
    let now = Instant::now();
    let mut parsed = Vec::with_capacity(count as usize);
    for i in 0..count {
        let raw = call.guest.read_bytes(
            offset(subs, i, poll::SUBSCRIPTION_SIZE)?,
            poll::SUBSCRIPTION_SIZE,
        )?;
        let sub = poll::parse(&raw, now, |id| now_ns(id).ok()).map_err(Errno)?;
        if sub.due.is_none() {
            call.ctx.fds.get(sub.fd)?;
        }
        parsed.push(sub);
    }
    let at = match poll::wait(&parsed, deadline, |at| {
        call.cpu.released_while(deadline, || poll::sleep_until(at))
    }) {
        poll::Waited::At(at) => at,
        poll::Waited::DeadlineReached => return Ok(()),
    };
    let mut written = 0u32;
    for sub in parsed.iter().filter(|s| poll::fired(s, &parsed, at)) {
        let nbytes = match call.ctx.fds.get(sub.fd) {
            Ok(Descriptor::Stdin) if sub.kind == poll::FD_READ && sub.due.is_none() => {
                (call.ctx.stdin.len() - call.ctx.stdin_read) as u64
            }
            _ => 0,
        };
        call.guest.write_bytes(
            offset(events, written, poll::EVENT_SIZE)?,
            &poll::event(sub, nbytes),
        )?;
        written += 1;
    }
    call.guest.write_u32(out, written)
}

pub fn unsupported_1(_cx: &mut WasiCall<'_>, _a: u32) -> WasiResult<()> {
    Err(Errno::NOSYS)
}

pub fn unsupported_2(_cx: &mut WasiCall<'_>, _a: u32, _b: u32) -> WasiResult<()> {
    Err(Errno::NOTSUP)
}

pub fn unsupported_3(_cx: &mut WasiCall<'_>, _a: u32, _b: u32, _c: u32) -> WasiResult<()> {
    Err(Errno::NOTSUP)
}

pub fn unsupported_5(
    _cx: &mut WasiCall<'_>,
    _a: u32,
    _b: u32,
    _c: u32,
    _d: u32,
    _e: u32,
) -> WasiResult<()> {
    Err(Errno::NOTSUP)
}

pub fn unsupported_6(
    _cx: &mut WasiCall<'_>,
    _a: u32,
    _b: u32,
    _c: u32,
    _d: u32,
    _e: u32,
    _f: u32,
) -> WasiResult<()> {
    Err(Errno::NOTSUP)
}

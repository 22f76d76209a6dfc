//! WASI preview 1 `poll_oneoff` as the executor serves it, for the backends that implement it
//! themselves (wasmer's WASI) or in place of the runtime's (wasmtime's, whose blocking sleep
//! ignores the activation's deadline): subscriptions decoded from guest memory, the earliest
//! clock waited for but never past the deadline, events encoded for the guest.
//!
//! No descriptor of an activation ever blocks (stdin holds the parameters, stdout and stderr
//! are captured, files are regular files), so a descriptor subscription is ready at once and a
//! poll with one never sleeps.

use std::time::{Duration, Instant};

/// Bytes of one `subscription` and one `event` in guest memory.
pub const SUBSCRIPTION_SIZE: u32 = 48;
pub const EVENT_SIZE: u32 = 32;
/// Most subscriptions one call may pass (a guest cannot make the host allocate without bound).
pub const MAX_SUBSCRIPTIONS: u32 = 4096;

/// Event types.
pub const CLOCK: u8 = 0;
pub const FD_READ: u8 = 1;
pub const FD_WRITE: u8 = 2;
/// `subclockflags`: the timeout is an absolute time of the clock.
const ABSTIME: u16 = 1;

/// WASI errno values used here.
pub const ERRNO_INVAL: u16 = 28;

/// One decoded subscription.
#[derive(Debug, Clone, Copy)]
pub struct Subscription {
    pub userdata: u64,
    pub kind: u8,
    /// For a clock: when it fires.
    pub due: Option<Instant>,
    /// For a descriptor: its number.
    pub fd: u32,
}

/// Decodes one subscription; `clock_now_ns` reads a clock as the guest sees it (`None` for an
/// unknown clock), so absolute timeouts can be turned into instants.
pub fn parse(
    raw: &[u8],
    now: Instant,
    clock_now_ns: impl Fn(u32) -> Option<u64>,
) -> Result<Subscription, u16> {
    let u64_at = |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().unwrap_or_default());
    let u32_at = |at: usize| u32::from_le_bytes(raw[at..at + 4].try_into().unwrap_or_default());
    if raw.len() != SUBSCRIPTION_SIZE as usize {
        return Err(ERRNO_INVAL);
    }
    let userdata = u64_at(0);
    let kind = raw[8];
    match kind {
        CLOCK => {
            let id = u32_at(16);
            let timeout = u64_at(24);
            let flags = u16::from_le_bytes([raw[40], raw[41]]);
            let clock_now = clock_now_ns(id).ok_or(ERRNO_INVAL)?;
            let wait = if flags & ABSTIME != 0 {
                timeout.saturating_sub(clock_now)
            } else {
                timeout
            };
            // A timeout beyond any deadline is as good as forever.
            let due = now
                .checked_add(Duration::from_nanos(wait))
                .unwrap_or(now + Duration::from_secs(1 << 32));
            Ok(Subscription {
                userdata,
                kind,
                due: Some(due),
                fd: 0,
            })
        }
        FD_READ | FD_WRITE => Ok(Subscription {
            userdata,
            kind,
            due: None,
            fd: u32_at(16),
        }),
        _ => Err(ERRNO_INVAL),
    }
}

/// How a wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// Subscriptions fired at this instant (see [`fired`]).
    At(Instant),
    /// The deadline came before any subscription fired: the activation is over.
    DeadlineReached,
}

/// When a poll's wait ends.
#[derive(Debug, PartialEq, Eq)]
pub enum WakeUp {
    /// At once: a descriptor is ready, or nothing was asked for.
    Now,
    /// When the earliest clock fires.
    At(Instant),
    /// At the activation's deadline, before any clock fires: the activation is over then.
    Deadline(Instant),
}

/// When the wait for `subs` ends, given the activation's `deadline`.
pub fn wake_up(subs: &[Subscription], deadline: Instant) -> WakeUp {
    if subs.iter().any(|s| s.due.is_none()) {
        return WakeUp::Now;
    }
    match subs.iter().filter_map(|s| s.due).min() {
        None => WakeUp::Now,
        Some(earliest) if earliest > deadline => WakeUp::Deadline(deadline),
        Some(earliest) => WakeUp::At(earliest),
    }
}

/// Waits until the earliest subscription fires, or until `deadline` if that is sooner, calling
/// `sleep_until` only when there is something to wait for (a caller that holds a CPU slot gives
/// it back inside `sleep_until`, so polls that answer at once keep it).
pub fn wait(subs: &[Subscription], deadline: Instant, sleep_until: impl FnOnce(Instant)) -> Waited {
    match wake_up(subs, deadline) {
        WakeUp::Now => Waited::At(Instant::now()),
        WakeUp::At(at) => {
            sleep_until(at);
            Waited::At(Instant::now())
        }
        WakeUp::Deadline(at) => {
            sleep_until(at);
            Waited::DeadlineReached
        }
    }
}

/// Sleeps this thread until `at`.
pub fn sleep_until(at: Instant) {
    std::thread::sleep(at.saturating_duration_since(Instant::now()));
}

/// Whether `sub` fired by `at`: every descriptor, and the clocks that are due when no
/// descriptor was (a poll with a descriptor does not wait, so its clocks do not fire early).
pub fn fired(sub: &Subscription, subs: &[Subscription], at: Instant) -> bool {
    match sub.due {
        None => true,
        Some(due) => due <= at && subs.iter().all(|s| s.due.is_some()),
    }
}

/// The event for a fired subscription; `nbytes` is what a descriptor has ready.
pub fn event(sub: &Subscription, nbytes: u64) -> [u8; EVENT_SIZE as usize] {
    let mut ev = [0u8; EVENT_SIZE as usize];
    ev[0..8].copy_from_slice(&sub.userdata.to_le_bytes());
    ev[10] = sub.kind;
    ev[16..24].copy_from_slice(&nbytes.to_le_bytes());
    ev
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(userdata: u64, timeout_ns: u64, abstime: bool) -> [u8; 48] {
        let mut raw = [0u8; 48];
        raw[0..8].copy_from_slice(&userdata.to_le_bytes());
        raw[8] = CLOCK;
        raw[16..20].copy_from_slice(&1u32.to_le_bytes());
        raw[24..32].copy_from_slice(&timeout_ns.to_le_bytes());
        raw[40] = u8::from(abstime);
        raw
    }

    #[test]
    fn sleeps_until_the_clock_or_stops_at_the_deadline() {
        let now = Instant::now();
        let monotonic = |_: u32| Some(5_000_000_000);
        let short = parse(&clock(1, 30_000_000, false), now, monotonic).unwrap();
        assert!(matches!(
            wait(&[short], now + Duration::from_secs(5), sleep_until),
            Waited::At(_)
        ));
        assert!(now.elapsed() >= Duration::from_millis(30));

        // Absolute: due at 5 s + 1 h of the guest's clock, far past a 50 ms deadline.
        let now = Instant::now();
        let long = parse(
            &clock(2, 5_000_000_000 + 3_600_000_000_000, true),
            now,
            monotonic,
        )
        .unwrap();
        let deadline = now + Duration::from_millis(50);
        assert_eq!(
            wait(&[long], deadline, sleep_until),
            Waited::DeadlineReached
        );
        let took = now.elapsed();
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_secs(5),
            "{took:?}"
        );

        // An unknown clock or event type is invalid.
        assert_eq!(
            parse(&clock(3, 1, false), now, |_| None).unwrap_err(),
            ERRNO_INVAL
        );
        let mut bad = clock(4, 1, false);
        bad[8] = 9;
        assert_eq!(parse(&bad, now, monotonic).unwrap_err(), ERRNO_INVAL);
    }

    #[test]
    fn a_descriptor_is_ready_at_once() {
        let now = Instant::now();
        let mut raw = [0u8; 48];
        raw[8] = FD_READ;
        let fd = parse(&raw, now, |_| Some(0)).unwrap();
        let sleepy = parse(&clock(1, 60_000_000_000, false), now, |_| Some(0)).unwrap();
        let subs = [fd, sleepy];
        let Waited::At(at) = wait(&subs, now + Duration::from_secs(60), sleep_until) else {
            panic!("a descriptor is ready");
        };
        assert!(now.elapsed() < Duration::from_secs(1));
        assert!(fired(&fd, &subs, at) && !fired(&sleepy, &subs, at));
        assert_eq!(event(&fd, 7)[16], 7);
    }
}

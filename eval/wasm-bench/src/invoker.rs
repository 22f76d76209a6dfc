//! An OpenWhisk-like container pool in front of a platform, as the invoker keeps one: a fixed
//! budget of user memory divided into containers of a fixed size; an activation goes to a warm
//! container of its action that runs fewer activations than the action's concurrency limit
//! (OpenWhisk's `limits.concurrency`, 1 by default), otherwise to a new one (a cold start)
//! while memory lasts, otherwise the least recently used idle container of another action is
//! removed to make room, otherwise the activation waits. Idle containers are suspended after a
//! grace period (on platforms that suspend) and removed after an idle timeout.

use std::{
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::sync::Notify;

use crate::{
    failures,
    platform::{self, Action, Container, Platform, RunResult, blocking},
};

#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// OpenWhisk's `user-memory` (1024 MB by default).
    pub user_memory_mb: u64,
    /// Memory of every action container (OpenWhisk's default action memory, 256 MB; for the
    /// capacity experiment's `measured` sizing, what an executor measurably needs per
    /// container).
    pub container_memory_mb: f64,
    /// Activations one container runs at once (the action's concurrency limit).
    pub concurrency: usize,
    /// Idle time before a container is suspended.
    pub pause_grace: Duration,
    /// Idle time before a container is removed.
    pub idle_timeout: Duration,
}

impl PoolConfig {
    /// OpenWhisk's defaults, with the suspension grace of its earlier releases (50 ms) so that
    /// idle containers really are paused between activations, and `idle_timeout` given.
    pub fn openwhisk(idle_timeout: Duration) -> PoolConfig {
        PoolConfig {
            user_memory_mb: 1024,
            container_memory_mb: 256.0,
            concurrency: 1,
            pause_grace: Duration::from_millis(50),
            idle_timeout,
        }
    }

    /// Containers that fit in the user memory.
    pub fn slots(&self) -> usize {
        (self.user_memory_mb as f64 / self.container_memory_mb.max(f64::MIN_POSITIVE)).max(1.0)
            as usize
    }
}

/// One finished activation as the pool saw it.
#[derive(Debug)]
pub struct Activation {
    pub result: RunResult,
    /// A new container was created for it.
    pub cold: bool,
}

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum SlotState {
    Warm,
    /// Being suspended or resumed outside the lock: not to be used or removed meanwhile.
    Suspending,
    Suspended,
    Resuming,
}

/// A container the pool holds: its activations in flight take clones of `container`, and give
/// them back (under the lock) before `in_flight` drops, so a container with none in flight and
/// in no transition is the pool's alone.
struct Slot {
    id: u64,
    action: String,
    container: Arc<Box<dyn Container>>,
    in_flight: usize,
    /// When it last had no activation in flight (or was created).
    since: Instant,
    state: SlotState,
    /// An activation failed on it: removed once its last activation ends, given no more.
    doomed: bool,
}

impl Slot {
    /// Free for new activations of `action` up to `limit` at once.
    fn has_room(&self, action: &str, limit: usize) -> bool {
        self.action == action && !self.doomed && self.in_flight < limit
    }

    /// Idle and the pool's alone: may be removed.
    fn removable(&self) -> bool {
        self.in_flight == 0 && matches!(self.state, SlotState::Warm | SlotState::Suspended)
    }
}

/// A container being created, with the activations that will run on it.
struct Pending {
    id: u64,
    action: String,
    reserved: usize,
}

#[derive(Default)]
struct PoolState {
    slots: Vec<Slot>,
    /// Containers being created count as used.
    pending: Vec<Pending>,
    next_id: u64,
    closed: bool,
}

impl PoolState {
    fn used(&self) -> usize {
        self.slots.len() + self.pending.len()
    }

    fn index(&self, id: u64) -> Option<usize> {
        self.slots.iter().position(|s| s.id == id)
    }

    /// Takes slot `index` out of the pool; it must be removable.
    fn take(&mut self, index: usize) -> Box<dyn Container> {
        let slot = self.slots.swap_remove(index);
        Arc::try_unwrap(slot.container)
            .unwrap_or_else(|_| unreachable!("a removable container has no other holder"))
    }
}

/// One activation's use of a container.
struct Lease {
    id: u64,
    container: Arc<Box<dyn Container>>,
}

/// What an activation does next, decided under the pool's lock.
enum Step {
    /// Run on a warm container of its action with room.
    Warm(Lease),
    /// Resume a suspended one first.
    Resume(Lease),
    /// Wait for container `.0`, being created with room reserved for this activation.
    Join(u64),
    /// Create container `id`, after removing `evicted` to make room.
    Create {
        id: u64,
        evicted: Option<Box<dyn Container>>,
    },
    /// Nothing is free: wait for the pool to change.
    Wait,
}

/// The pool. Activations are async: one waiting for room, for a container being created or
/// for its answer holds no thread, so an open-loop generator drives thousands of them from one
/// thread; containers reached over HTTP take activations on async sockets, other platform work
/// (creating, pausing, removing) runs on tokio's blocking threads. Activations must be run to
/// completion (not dropped half-way), or the room they reserved is not given back.
pub struct Invoker {
    platform: Arc<dyn Platform>,
    config: PoolConfig,
    state: Mutex<PoolState>,
    /// Woken whenever a container is created, freed, suspended, resumed or removed.
    changed: Notify,
}

impl Invoker {
    /// A pool over `platform`, with a housekeeping thread for suspension and idle removal.
    pub fn start(platform: Arc<dyn Platform>, config: PoolConfig) -> Arc<Invoker> {
        let invoker = Arc::new(Invoker {
            platform,
            config,
            state: Mutex::new(PoolState::default()),
            changed: Notify::new(),
        });
        let weak = Arc::downgrade(&invoker);
        std::thread::Builder::new()
            .name("pool-housekeeping".into())
            .spawn(move || {
                while let Some(invoker) = weak.upgrade() {
                    if !invoker.housekeeping() {
                        return;
                    }
                    drop(invoker);
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
            .expect("starting the pool's housekeeping thread");
        invoker
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().expect("pool state")
    }

    /// Runs one activation of `action` with `params` (merged over its bound parameters).
    pub async fn invoke(&self, action: &Action, params: &Value) -> anyhow::Result<Activation> {
        let (lease, cold) = self.acquire(action).await?;
        let params = action.params(params);
        match platform::run_async(&lease.container, params).await {
            Ok(result) => {
                self.release(lease, false).await;
                Ok(Activation { result, cold })
            }
            Err(error) => {
                // The container is in an unknown state: remove it, as the invoker does.
                self.release(lease, true).await;
                Err(error)
            }
        }
    }

    pub fn platform_name(&self) -> &str {
        self.platform.name()
    }

    /// Runs one activation with no parameters of its own and tells its HTTP status and whether
    /// it was a cold start; a failure below HTTP is logged and reported as status 0.
    pub async fn invoke_outcome(&self, action: &Action) -> (u16, bool) {
        match self
            .invoke(action, &Value::Object(Default::default()))
            .await
        {
            Ok(activation) => (activation.result.status, activation.cold),
            Err(error) => {
                tracing::warn!(platform = self.platform.name(), %error, "activation failed");
                (0, false)
            }
        }
    }

    /// A container for `action`: a warm one with room, or a new one once memory allows.
    async fn acquire(&self, action: &Action) -> anyhow::Result<(Lease, bool)> {
        loop {
            // Registered before the pool is looked at, so no change in between is missed.
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            match self.next_step(action)? {
                Step::Warm(lease) => return Ok((lease, false)),
                Step::Resume(lease) => return Ok((self.resume(lease).await?, false)),
                Step::Join(id) => return Ok((self.join(id).await?, true)),
                Step::Create { id, evicted } => {
                    return Ok((self.create(action, id, evicted).await?, true));
                }
                Step::Wait => changed.await,
            }
        }
    }

    /// Looks at the pool for `action` and reserves what it takes.
    fn next_step(&self, action: &Action) -> anyhow::Result<Step> {
        let limit = self.config.concurrency.max(1);
        let mut state = self.lock();
        if state.closed {
            anyhow::bail!("the pool is shut down");
        }
        // The busiest container of this action with room (activations packed as the invoker
        // packs them), the most recently used among equals.
        let ready = state
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.has_room(&action.name, limit)
                    && matches!(s.state, SlotState::Warm | SlotState::Suspended)
            })
            .max_by_key(|(_, s)| (s.in_flight, s.since))
            .map(|(i, _)| i);
        if let Some(index) = ready {
            let slot = &mut state.slots[index];
            slot.in_flight += 1;
            let lease = Lease {
                id: slot.id,
                container: Arc::clone(&slot.container),
            };
            if slot.state == SlotState::Warm {
                return Ok(Step::Warm(lease));
            }
            slot.state = SlotState::Resuming;
            return Ok(Step::Resume(lease));
        }
        // A container of this action being created with room: wait for it.
        if let Some(pending) = state
            .pending
            .iter_mut()
            .find(|p| p.action == action.name && p.reserved < limit)
        {
            pending.reserved += 1;
            return Ok(Step::Join(pending.id));
        }
        // A container of this action that is being suspended or resumed will do.
        let transient = state.slots.iter().any(|s| {
            s.has_room(&action.name, limit)
                && matches!(s.state, SlotState::Suspending | SlotState::Resuming)
        });
        if transient {
            return Ok(Step::Wait);
        }
        let mut evicted = None;
        if state.used() >= self.config.slots() {
            // Make room: the least recently used idle container of any action.
            evicted = state
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.removable())
                .min_by_key(|(_, s)| s.since)
                .map(|(i, _)| i)
                .map(|i| state.take(i));
        }
        if state.used() >= self.config.slots() {
            return Ok(Step::Wait);
        }
        let id = state.next_id;
        state.next_id += 1;
        state.pending.push(Pending {
            id,
            action: action.name.clone(),
            reserved: 1,
        });
        Ok(Step::Create { id, evicted })
    }

    /// Resumes the suspended container of `lease`.
    async fn resume(&self, lease: Lease) -> anyhow::Result<Lease> {
        let container = Arc::clone(&lease.container);
        let resumed = blocking(move || container.resume()).await;
        {
            let mut state = self.lock();
            if let Some(index) = state.index(lease.id) {
                state.slots[index].state = SlotState::Warm;
            }
        }
        self.changed.notify_waiters();
        match resumed {
            Ok(()) => Ok(lease),
            Err(error) => {
                self.release(lease, true).await;
                Err(error)
            }
        }
    }

    /// Creates container `id` for `action` (reserved as pending), after removing `evicted`.
    async fn create(
        &self,
        action: &Action,
        id: u64,
        evicted: Option<Box<dyn Container>>,
    ) -> anyhow::Result<Lease> {
        if let Some(old) = evicted {
            remove(old, "removing an evicted container").await;
        }
        let platform = Arc::clone(&self.platform);
        let wanted = action.clone();
        let created = blocking(move || platform.create(&wanted)).await;
        let mut state = self.lock();
        let index = state.pending.iter().position(|p| p.id == id);
        let pending = state
            .pending
            .swap_remove(index.expect("pending until here"));
        let result = created.map(|container| {
            let container = Arc::new(container);
            state.slots.push(Slot {
                id,
                action: action.name.clone(),
                container: Arc::clone(&container),
                in_flight: pending.reserved,
                since: Instant::now(),
                state: SlotState::Warm,
                doomed: false,
            });
            Lease { id, container }
        });
        drop(state);
        self.changed.notify_waiters();
        result
    }

    /// Waits for container `id`, being created with room reserved for this activation.
    async fn join(&self, id: u64) -> anyhow::Result<Lease> {
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            {
                let state = self.lock();
                if let Some(index) = state.index(id) {
                    let container = Arc::clone(&state.slots[index].container);
                    return Ok(Lease { id, container });
                }
                if !state.pending.iter().any(|p| p.id == id) {
                    anyhow::bail!("the container this activation waited for could not be created");
                }
            }
            changed.await;
        }
    }

    /// Ends an activation's use of its container; `failed`: the container is removed once no
    /// activation runs on it any more.
    async fn release(&self, lease: Lease, failed: bool) {
        let removed = {
            let mut state = self.lock();
            let Lease { id, container } = lease;
            drop(container);
            let closed = state.closed;
            let mut removed = None;
            if let Some(index) = state.index(id) {
                let slot = &mut state.slots[index];
                slot.in_flight -= 1;
                slot.doomed |= failed;
                if slot.in_flight == 0 {
                    slot.since = Instant::now();
                    if (slot.doomed || closed) && slot.removable() {
                        removed = Some(state.take(index));
                    }
                }
            }
            removed
        };
        self.changed.notify_waiters();
        if let Some(container) = removed {
            remove(container, "removing a failed container").await;
        }
    }

    /// Suspends a container idle past the grace period and removes those idle past the
    /// timeout. Returns false once the pool is shut down.
    fn housekeeping(&self) -> bool {
        let now = Instant::now();
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        let mut expired = Vec::new();
        let mut index = 0;
        while index < state.slots.len() {
            let slot = &state.slots[index];
            if slot.removable() && now.duration_since(slot.since) >= self.config.idle_timeout {
                expired.push(state.take(index));
            } else {
                index += 1;
            }
        }
        let to_suspend = self.platform.suspends().then(|| {
            state.slots.iter().position(|s| {
                s.state == SlotState::Warm
                    && s.in_flight == 0
                    && now.duration_since(s.since) >= self.config.pause_grace
            })
        });
        let suspending = to_suspend.flatten().map(|index| {
            let slot = &mut state.slots[index];
            slot.state = SlotState::Suspending;
            (slot.id, Arc::clone(&slot.container))
        });
        drop(state);
        for container in expired {
            if let Err(error) = container.remove() {
                failures::housekeeping("removing an idle container", &error);
            }
        }
        if let Some((id, container)) = suspending {
            let suspended = container.suspend();
            drop(container);
            let mut state = self.lock();
            let mut removed = None;
            if let Some(index) = state.index(id) {
                state.slots[index].state = if suspended.is_ok() {
                    SlotState::Suspended
                } else {
                    SlotState::Warm
                };
                // Shut down meanwhile.
                if state.closed {
                    removed = Some(state.take(index));
                }
            }
            drop(state);
            if let Some(container) = removed
                && let Err(error) = container.remove()
            {
                failures::housekeeping("removing a container after shutdown", &error);
            }
            if let Err(error) = suspended {
                failures::suspension_failed(&error);
            }
            self.changed.notify_waiters();
        }
        true
    }

    /// Removes every idle container, and each busy one when its last activation ends, and
    /// refuses further activations.
    pub fn shutdown(&self) {
        let mut state = self.lock();
        state.closed = true;
        let mut idle = Vec::new();
        let mut index = 0;
        while index < state.slots.len() {
            if state.slots[index].removable() {
                idle.push(state.take(index));
            } else {
                index += 1;
            }
        }
        drop(state);
        self.changed.notify_waiters();
        for container in idle {
            if let Err(error) = container.remove() {
                failures::housekeeping("removing an idle container at shutdown", &error);
            }
        }
    }
}

/// Removes `container`; a failure is counted as housekeeping (`what` says when it happened).
async fn remove(container: Box<dyn Container>, what: &'static str) {
    if let Err(error) = blocking(move || container.remove()).await {
        failures::housekeeping(what, &error);
    }
}

#[cfg(test)]
mod tests {
    use std::{
        net::{IpAddr, Ipv4Addr, SocketAddr},
        sync::atomic::{AtomicUsize, Ordering},
    };

    use super::*;
    use crate::platform::RunEndpoint;

    /// A platform whose containers take 100 ms per activation and count what happens to them.
    #[derive(Default)]
    struct Counting {
        created: AtomicUsize,
        removed: Arc<AtomicUsize>,
        running: Arc<AtomicUsize>,
        most_running: Arc<AtomicUsize>,
        /// Containers take activations over HTTP here instead of in `run`.
        endpoint: Option<SocketAddr>,
    }

    struct Slow {
        removed: Arc<AtomicUsize>,
        running: Arc<AtomicUsize>,
        most_running: Arc<AtomicUsize>,
        endpoint: Option<RunEndpoint>,
    }

    impl Platform for Counting {
        fn name(&self) -> &str {
            "counting"
        }

        fn create(&self, _: &Action) -> anyhow::Result<Box<dyn Container>> {
            self.created.fetch_add(1, Ordering::SeqCst);
            Ok(Box::new(Slow {
                removed: Arc::clone(&self.removed),
                running: Arc::clone(&self.running),
                most_running: Arc::clone(&self.most_running),
                endpoint: self.endpoint.map(|addr| RunEndpoint {
                    addr,
                    path: "/run".into(),
                    action: "a".into(),
                }),
            }))
        }

        fn host_address(&self) -> IpAddr {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }
    }

    impl Container for Slow {
        fn run(&self, _: &Value) -> anyhow::Result<RunResult> {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_running.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(100));
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(RunResult {
                status: 200,
                body: b"{}".to_vec(),
            })
        }

        fn endpoint(&self) -> Option<&RunEndpoint> {
            self.endpoint.as_ref()
        }

        fn remove(self: Box<Self>) -> anyhow::Result<()> {
            self.removed.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    /// A server that holds every request until it has held `full` at once (or for 10 s), then
    /// answers each, counting the most it held at once; the peak does not depend on how fast
    /// the requests arrive.
    fn holding_server(
        full: usize,
        running: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    ) -> SocketAddr {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let (filled, _) = tokio::sync::watch::channel(false);
                let filled = Arc::new(filled);
                loop {
                    let (mut socket, _) = listener.accept().await.unwrap();
                    let (running, most) = (Arc::clone(&running), Arc::clone(&most));
                    let filled = Arc::clone(&filled);
                    tokio::spawn(async move {
                        let mut request = Vec::new();
                        while !complete(&request) {
                            if socket.read_buf(&mut request).await.unwrap() == 0 {
                                return;
                            }
                        }
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        if now >= full {
                            filled.send_replace(true);
                        }
                        let mut released = filled.subscribe();
                        let held = released.wait_for(|filled| *filled);
                        let _ = tokio::time::timeout(Duration::from_secs(10), held).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
                        let _ = socket.write_all(answer.as_bytes()).await;
                    });
                }
            });
        });
        addr
    }

    /// Whether `request` holds a whole request: its head and `Content-Length` bytes of body.
    fn complete(request: &[u8]) -> bool {
        let text = String::from_utf8_lossy(request);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|n| n.parse::<usize>().ok());
        length.is_some_and(|n| body.len() >= n)
    }

    /// `activations` of one action at once through a pool over `platform` with `concurrency`,
    /// sent from one thread; the containers created and removed, and the most activations that
    /// ran at once.
    fn burst_on(
        platform: Arc<Counting>,
        concurrency: usize,
        activations: usize,
    ) -> (usize, usize, usize) {
        let config = PoolConfig {
            concurrency,
            ..PoolConfig::openwhisk(Duration::from_secs(60))
        };
        let invoker = Invoker::start(platform.clone(), config);
        let action = Action::new("a", "echo", Value::Null);
        let runtime = crate::runtime::build("test-activations").unwrap();
        runtime.block_on(async {
            let tasks: Vec<_> = (0..activations)
                .map(|_| {
                    let (invoker, action) = (Arc::clone(&invoker), action.clone());
                    tokio::spawn(async move { invoker.invoke_outcome(&action).await.0 })
                })
                .collect();
            for task in tasks {
                assert_eq!(task.await.unwrap(), 200);
            }
        });
        invoker.shutdown();
        (
            platform.created.load(Ordering::SeqCst),
            platform.most_running.load(Ordering::SeqCst),
            platform.removed.load(Ordering::SeqCst),
        )
    }

    fn burst(concurrency: usize, activations: usize) -> (usize, usize, usize) {
        burst_on(Arc::new(Counting::default()), concurrency, activations)
    }

    #[test]
    fn the_concurrency_limit_packs_activations_into_containers() {
        // Limit 1: one container per activation in flight, at most 4 (1024 / 256 MB): 6
        // activations make 4 containers and 2 of them wait.
        let (created, most, removed) = burst(1, 6);
        assert_eq!((created, most, removed), (4, 4, 4));
        // Limit 3: 6 at once fit in 2 containers.
        let (created, most, removed) = burst(3, 6);
        assert_eq!((created, most, removed), (2, 6, 2));
        // Limit 10: one container takes all 6.
        let (created, most, removed) = burst(10, 6);
        assert_eq!((created, most, removed), (1, 6, 1));
    }

    #[test]
    fn activations_over_http_wait_and_run_without_a_thread_each() {
        // 600 activations at once, 4 containers of limit 100: 400 run at the server, 200 wait
        // for room, all sent from one thread. Thread-per-activation would take 600 threads.
        let server_running = Arc::new(AtomicUsize::new(0));
        let server_most = Arc::new(AtomicUsize::new(0));
        let addr = holding_server(400, Arc::clone(&server_running), Arc::clone(&server_most));
        let platform = Arc::new(Counting {
            endpoint: Some(addr),
            ..Counting::default()
        });
        let before = crate::runtime::threads();
        let sampler = std::thread::spawn(move || {
            let mut most = 0;
            for _ in 0..40 {
                std::thread::sleep(Duration::from_millis(10));
                most = most.max(crate::runtime::threads());
            }
            most
        });
        let (created, _, removed) = burst_on(platform, 100, 600);
        let most_threads = sampler.join().unwrap();
        // Other tests run beside this one: allow for their threads, not for 600.
        assert!(
            most_threads < before + 64,
            "{most_threads} threads (from {before})"
        );
        assert_eq!((created, removed), (4, 4));
        assert_eq!(server_most.load(Ordering::SeqCst), 400);
    }
}

//! An OpenWhisk-like container pool in front of a platform, as the invoker keeps one: a fixed
//! budget of user memory divided into containers of a fixed size, a warm container of the same
//! action reused when free, otherwise a new one (a cold start) while memory lasts, otherwise
//! the least recently used idle container of another action is removed to make room, otherwise
//! the activation waits. Idle containers are suspended after a grace period (on platforms that
//! suspend) and removed after an idle timeout.

use std::{
    sync::{Arc, Condvar, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    failures,
    platform::{Action, Container, Platform, RunResult},
};

#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// OpenWhisk's `user-memory` (1024 MB by default).
    pub user_memory_mb: u64,
    /// Memory of every action container (OpenWhisk's default action memory, 256 MB).
    pub container_memory_mb: u64,
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
            container_memory_mb: 256,
            pause_grace: Duration::from_millis(50),
            idle_timeout,
        }
    }

    fn slots(&self) -> usize {
        (self.user_memory_mb / self.container_memory_mb.max(1)).max(1) as usize
    }
}

/// One finished activation as the pool saw it.
#[derive(Debug)]
pub struct Activation {
    pub result: RunResult,
    /// A new container was created for it.
    pub cold: bool,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum IdleState {
    Warm,
    Suspending,
    Suspended,
}

struct Idle {
    action: String,
    container: Box<dyn Container>,
    since: Instant,
    state: IdleState,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Idle>,
    /// Containers running an activation, being created or being suspended count as used.
    busy: usize,
    closed: bool,
}

impl PoolState {
    fn used(&self) -> usize {
        self.idle.len() + self.busy
    }
}

pub struct Invoker {
    platform: Arc<dyn Platform>,
    config: PoolConfig,
    state: Mutex<PoolState>,
    changed: Condvar,
}

impl Invoker {
    /// A pool over `platform`, with a housekeeping thread for suspension and idle removal.
    pub fn start(platform: Arc<dyn Platform>, config: PoolConfig) -> Arc<Invoker> {
        let invoker = Arc::new(Invoker {
            platform,
            config,
            state: Mutex::new(PoolState::default()),
            changed: Condvar::new(),
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
    pub fn invoke(&self, action: &Action, params: &Value) -> anyhow::Result<Activation> {
        let (mut container, cold) = self.acquire(action)?;
        let params = action.params(params);
        let result = container.run(&params);
        match result {
            Ok(result) => {
                self.release(action, container);
                Ok(Activation { result, cold })
            }
            Err(error) => {
                // The container is in an unknown state: remove it, as the invoker does.
                self.discard(container);
                Err(error)
            }
        }
    }

    pub fn platform_name(&self) -> &str {
        self.platform.name()
    }

    /// Runs one activation with no parameters of its own and tells its HTTP status and whether
    /// it was a cold start; a failure below HTTP is logged and reported as status 0.
    pub fn invoke_outcome(&self, action: &Action) -> (u16, bool) {
        match self.invoke(action, &Value::Object(Default::default())) {
            Ok(activation) => (activation.result.status, activation.cold),
            Err(error) => {
                tracing::warn!(platform = self.platform.name(), %error, "activation failed");
                (0, false)
            }
        }
    }

    /// A container for `action`: a warm one, or a new one once memory allows.
    fn acquire(&self, action: &Action) -> anyhow::Result<(Box<dyn Container>, bool)> {
        let mut state = self.lock();
        loop {
            if state.closed {
                anyhow::bail!("the pool is shut down");
            }
            // The most recently used free container of this action.
            let ready = state
                .idle
                .iter()
                .enumerate()
                .filter(|(_, c)| c.action == action.name && c.state != IdleState::Suspending)
                .max_by_key(|(_, c)| c.since)
                .map(|(i, _)| i);
            if let Some(index) = ready {
                let idle = state.idle.swap_remove(index);
                state.busy += 1;
                drop(state);
                let mut container = idle.container;
                if idle.state == IdleState::Suspended
                    && let Err(error) = container.resume()
                {
                    self.discard(container);
                    return Err(error);
                }
                return Ok((container, false));
            }
            let suspending_same = state
                .idle
                .iter()
                .any(|c| c.action == action.name && c.state == IdleState::Suspending);
            if !suspending_same {
                let mut evicted = None;
                if state.used() >= self.config.slots() {
                    // Make room: the least recently used free container of any action.
                    evicted = state
                        .idle
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.state != IdleState::Suspending)
                        .min_by_key(|(_, c)| c.since)
                        .map(|(i, _)| i)
                        .map(|i| state.idle.swap_remove(i));
                }
                if state.used() < self.config.slots() {
                    state.busy += 1;
                    drop(state);
                    if let Some(old) = evicted
                        && let Err(error) = old.container.remove()
                    {
                        failures::housekeeping("removing an evicted container", &error);
                    }
                    return match self.platform.create(action) {
                        Ok(container) => Ok((container, true)),
                        Err(error) => {
                            self.lock().busy -= 1;
                            self.changed.notify_all();
                            Err(error)
                        }
                    };
                }
            }
            // Wait for a container to come free (or finish suspending).
            state = self.changed.wait(state).expect("pool state");
        }
    }

    fn release(&self, action: &Action, container: Box<dyn Container>) {
        let mut state = self.lock();
        state.busy -= 1;
        state.idle.push(Idle {
            action: action.name.clone(),
            container,
            since: Instant::now(),
            state: IdleState::Warm,
        });
        drop(state);
        self.changed.notify_all();
    }

    fn discard(&self, container: Box<dyn Container>) {
        if let Err(error) = container.remove() {
            failures::housekeeping("removing a failed container", &error);
        }
        self.lock().busy -= 1;
        self.changed.notify_all();
    }

    /// Suspends containers idle past the grace period and removes those idle past the
    /// timeout. Returns false once the pool is shut down.
    fn housekeeping(&self) -> bool {
        let now = Instant::now();
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        let mut expired = Vec::new();
        let mut index = 0;
        while index < state.idle.len() {
            let idle = &state.idle[index];
            if idle.state != IdleState::Suspending
                && now.duration_since(idle.since) >= self.config.idle_timeout
            {
                expired.push(state.idle.swap_remove(index));
            } else {
                index += 1;
            }
        }
        let to_suspend = self.platform.suspends().then(|| {
            state.idle.iter().position(|c| {
                c.state == IdleState::Warm && now.duration_since(c.since) >= self.config.pause_grace
            })
        });
        let suspending = to_suspend.flatten().map(|index| {
            let idle = &mut state.idle[index];
            idle.state = IdleState::Suspending;
            // The container leaves the list while suspending, so its place is marked by a
            // stand-in that keeps the memory accounted for.
            std::mem::replace(&mut idle.container, Box::new(Placeholder))
        });
        drop(state);
        for idle in expired {
            if let Err(error) = idle.container.remove() {
                failures::housekeeping("removing an idle container", &error);
            }
        }
        if suspending.is_some() {
            self.changed.notify_all();
        }
        if let Some(mut container) = suspending {
            let suspended = container.suspend();
            let mut state = self.lock();
            let place = state
                .idle
                .iter_mut()
                .find(|c| c.state == IdleState::Suspending);
            match place {
                Some(idle) => {
                    idle.container = container;
                    idle.state = if suspended.is_ok() {
                        IdleState::Suspended
                    } else {
                        IdleState::Warm
                    };
                    drop(state);
                }
                // Shut down meanwhile.
                None => {
                    drop(state);
                    if let Err(error) = container.remove() {
                        failures::housekeeping("removing a container after shutdown", &error);
                    }
                }
            }
            if let Err(error) = suspended {
                failures::housekeeping("suspending an idle container", &error);
            }
            self.changed.notify_all();
        }
        true
    }

    /// Removes every idle container and refuses further activations.
    pub fn shutdown(&self) {
        let mut state = self.lock();
        state.closed = true;
        let idle: Vec<Idle> = state.idle.drain(..).collect();
        drop(state);
        self.changed.notify_all();
        for idle in idle {
            if let Err(error) = idle.container.remove() {
                failures::housekeeping("removing an idle container at shutdown", &error);
            }
        }
    }
}

/// Stands in for a container while the real one is being suspended outside the lock.
struct Placeholder;

impl Container for Placeholder {
    fn run(&mut self, _: &Value) -> anyhow::Result<RunResult> {
        anyhow::bail!("a container being suspended was run")
    }

    fn remove(self: Box<Self>) -> anyhow::Result<()> {
        Ok(())
    }
}

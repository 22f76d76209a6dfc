//! The one wasmtime engine of this process: the pooling allocator with copy-on-write memory
//! images when the address space allows it (on-demand allocation otherwise), epoch-based
//! interruption, and the ticker thread that drives the epochs.

use std::time::{Duration, Instant};

use anyhow::Context;
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, UpdateDeadline,
};

use crate::backend::{BackendSettings, MAX_TABLE_ELEMENTS};

/// How often the epoch advances. A looping guest is interrupted at most one tick after its
/// deadline, and each tick costs the ticker and every running guest one wake-up / clock read:
/// 5 ms keeps both small.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Tables one instance may define. Reference types allow several (a module with `externref`
/// values keeps them in a table of their own beside its function table); the pool reserves
/// address space for this many per slot, committed only as a table is used.
const POOL_TABLES_PER_INSTANCE: u32 = 4;

/// Builds the engine: pooling when possible, on-demand when the pool's address-space
/// reservation is refused (e.g. under `ulimit -v`). Returns the engine and which allocator won.
pub fn build(settings: &BackendSettings) -> anyhow::Result<(Engine, &'static str)> {
    let mut config = base_config();
    let slots = u32::try_from(settings.max_instances.max(1)).unwrap_or(u32::MAX);
    let mut pooling = PoolingAllocationConfig::default();
    pooling
        .total_core_instances(slots)
        .total_memories(slots)
        .total_tables(slots.saturating_mul(POOL_TABLES_PER_INSTANCE))
        .max_tables_per_module(POOL_TABLES_PER_INSTANCE)
        .table_elements(MAX_TABLE_ELEMENTS as usize)
        .max_memory_size(usize::try_from(settings.max_memory_bytes).unwrap_or(usize::MAX));
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    match Engine::new(&config) {
        Ok(engine) => Ok((engine, "pooling")),
        Err(error) => {
            tracing::warn!(%error, slots, "pooling allocator unavailable, falling back to on-demand allocation");
            let mut config = base_config();
            config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
            let engine = Engine::new(&config)
                .map_err(anyhow::Error::from)
                .context("creating the wasmtime engine")?;
            Ok((engine, "on-demand"))
        }
    }
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.epoch_interruption(true);
    // Copy-on-write images make a fresh instance's memory a cheap mapping of the module's data.
    config.memory_init_cow(true);
    config
}

/// Advances the engine's epoch forever, on its own thread.
pub fn start_ticker(engine: Engine) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("epoch-ticker".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        })
        .context("starting the epoch ticker")?;
    Ok(())
}

/// Arms `store` to stop its guest at `deadline`. The guest yields to a check of the wall clock
/// at every epoch tick rather than counting ticks, because on a loaded machine the ticker's
/// sleeps stretch and a count fixed in advance would overshoot the limit.
pub fn arm_deadline<T: 'static>(store: &mut Store<T>, deadline: Instant) {
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Continue(1)
        })
    });
}

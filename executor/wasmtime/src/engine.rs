//! The wasmtime engines of this process: for modules, the pooling allocator with copy-on-write
//! memory images and fiber stacks when the address space allows it (on-demand allocation
//! otherwise); for language engines, on-demand allocation with memories of this backend's own
//! (`image_memory.rs`), into which actions' memory images are mapped. Both with epoch-based
//! yielding and interruption, and the ticker thread that drives the epochs.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context;
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store,
    UpdateDeadline,
};

use wasm_executor::backend::{BackendSettings, MAX_TABLE_ELEMENTS};

use crate::image_memory::ImageMemories;

/// How often the epoch advances. A looping guest is interrupted at most one tick after its
/// deadline, and each tick costs the ticker and every running guest one wake-up / clock read:
/// 5 ms keeps both small.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Tables one instance may define. Reference types allow several (a module with `externref`
/// values keeps them in a table of their own beside its function table); the pool reserves
/// address space for this many per slot, committed only as a table is used.
const POOL_TABLES_PER_INSTANCE: u32 = 4;

/// Bytes of a table's elements reset in place when its instance ends (as for memory, below).
const TABLE_KEEP_RESIDENT: usize = 16 * 1024;

/// The instance allocator the engine got.
#[derive(Debug, Clone, Copy)]
pub enum Allocator {
    /// A pool of this many instance slots, reserved up front.
    Pooling {
        slots: usize,
    },
    OnDemand,
}

/// Builds the engine: pooling when possible, with fewer slots (down to
/// `settings.min_instances`) when the address space does not hold as many as asked for (a
/// 39-bit address space holds about a hundred 4 GiB memory reservations), on-demand when even
/// that is refused (e.g. under `ulimit -v`).
pub fn build(settings: &BackendSettings) -> anyhow::Result<(Engine, Allocator)> {
    let wanted = settings.max_instances.max(1);
    let mut slots = wanted;
    loop {
        match Engine::new(&pooling_config(settings, slots)) {
            Ok(engine) => {
                if slots < wanted {
                    tracing::warn!(
                        wanted,
                        slots,
                        "the address space holds fewer pooled instances than asked for"
                    );
                }
                return Ok((engine, Allocator::Pooling { slots }));
            }
            Err(_) if slots / 2 >= settings.min_instances.max(1) => slots /= 2,
            Err(error) => {
                tracing::warn!(%error, slots, "pooling allocator unavailable, falling back to on-demand allocation");
                let mut config = base_config();
                config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
                let engine = Engine::new(&config)
                    .map_err(anyhow::Error::from)
                    .context("creating the wasmtime engine")?;
                return Ok((engine, Allocator::OnDemand));
            }
        }
    }
}

fn pooling_config(settings: &BackendSettings, slots: usize) -> Config {
    let mut config = base_config();
    let slots = u32::try_from(slots).unwrap_or(u32::MAX);
    let mut pooling = PoolingAllocationConfig::default();
    pooling
        .total_core_instances(slots)
        .total_memories(slots)
        // Every guest runs on a fiber of its own (async calls), one stack per instance.
        .total_stacks(slots)
        .total_tables(slots.saturating_mul(POOL_TABLES_PER_INSTANCE))
        .max_tables_per_module(POOL_TABLES_PER_INSTANCE)
        .table_elements(MAX_TABLE_ELEMENTS as usize)
        .max_memory_size(usize::try_from(settings.max_memory_bytes).unwrap_or(usize::MAX))
        // An ended instance's written pages, up to this many bytes, are copied back from the
        // module's image (or zeroed) instead of decommitted; Linux's PAGEMAP_SCAN (6.7 and
        // newer) finds them, without it the lowest addresses are reset, written or not.
        .linear_memory_keep_resident(settings.keep_resident_bytes)
        .table_keep_resident(TABLE_KEEP_RESIDENT.min(settings.keep_resident_bytes))
        .pagemap_scan(Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    config
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.epoch_interruption(true);
    // Copy-on-write images make a fresh instance's memory a cheap mapping of the module's data.
    config.memory_init_cow(true);
    config
}

/// The engine of language engines: every memory is one of [`ImageMemories`], allocated with its
/// instance (engines have no data of their own to initialise: their image is mapped in).
pub fn build_for_images() -> anyhow::Result<Engine> {
    let mut config = base_config();
    config
        .memory_init_cow(false)
        .allocation_strategy(InstanceAllocationStrategy::OnDemand)
        .with_host_memory(Arc::new(ImageMemories));
    Engine::new(&config)
        .map_err(anyhow::Error::from)
        .context("creating the wasmtime engine of language engines")
}

/// Advances the engines' epochs forever, on a thread of their own.
pub fn start_ticker(engines: Vec<Engine>) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("epoch-ticker".into())
        .spawn(move || {
            loop {
                std::thread::sleep(EPOCH_TICK);
                for engine in &engines {
                    engine.increment_epoch();
                }
            }
        })
        .context("starting the epoch ticker")?;
    Ok(())
}

/// Arms `store` to stop its guest at `deadline`. At every epoch tick the guest checks the wall
/// clock rather than counting ticks (on a loaded machine the ticker's sleeps stretch and a count
/// fixed in advance would overshoot the limit); before the deadline it yields to the other tasks
/// of its thread, so a computing guest on an async worker holds it one tick at a time.
pub fn arm_deadline<T: 'static>(store: &mut Store<T>, deadline: Instant) {
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Yield(1)
        })
    });
}

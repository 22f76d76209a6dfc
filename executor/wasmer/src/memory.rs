//! The container's memory limit on linear memory: the engine's `Tunables` wrap every memory an
//! instance creates in [`LimitedMemory`], which refuses growth past the limit of the activation
//! being instantiated and remembers the refusal, so the trap that follows (the guest's
//! allocator failing) is reported as memory exhaustion.
//!
//! Tunables belong to the engine, but limits belong to containers: the limit reaches
//! `create_vm_memory` through a thread-local set around `Instance::new`, which runs on the
//! calling thread. A memory created outside such a scope is refused (fail closed).
//!
//! Every memory of the static style (all of them on 64-bit targets) is a [`KeptMemory`] instead
//! of wasmer's own: reset and kept when its instance ends. A language engine's instance (one
//! that said which memory image it will be given) gets one that may still hold its action's
//! image, mapped and resident; any other instance gets a zeroed one, into which wasmer copies the
//! module's data.

use std::{
    cell::RefCell,
    ptr::NonNull,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use wasmer::{
    Bytes, MemoryError, MemoryStyle, MemoryType, Pages, TableStyle, TableType,
    sys::{
        Tunables,
        vm::{LinearMemory, VMMemory, VMMemoryDefinition, VMTable, VMTableDefinition},
    },
};
use wasmer_compiler::BaseTunables;

use wasm_executor::backend::{MAX_TABLE_ELEMENTS, kept_memory::KeptMemory};

/// The memory limit of one activation, whether the guest ran into it, and whether its one
/// linear memory exists yet.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    limit_bytes: u64,
    exceeded: Arc<AtomicBool>,
    created: Arc<AtomicBool>,
}

impl MemoryBudget {
    pub fn new(limit_bytes: u64) -> Self {
        MemoryBudget {
            limit_bytes,
            exceeded: Arc::new(AtomicBool::new(false)),
            created: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Counts a memory being created: the first is fine, a second would get a limit of its own.
    fn one_memory(&self) -> Result<(), MemoryError> {
        if self.created.swap(true, Ordering::SeqCst) {
            return Err(MemoryError::Generic(
                "a guest may have one linear memory; the memory limit applies to it".into(),
            ));
        }
        Ok(())
    }

    pub fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::SeqCst)
    }

    fn refuse(&self) {
        self.exceeded.store(true, Ordering::SeqCst);
    }
}

thread_local! {
    static INSTANTIATING: RefCell<Option<MemoryBudget>> = const { RefCell::new(None) };
}

/// Runs `f` (an instantiation) with `budget` applying to the memories it creates.
pub fn with_budget<R>(budget: &MemoryBudget, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            INSTANTIATING.with(|cell| cell.borrow_mut().take());
        }
    }
    INSTANTIATING.with(|cell| *cell.borrow_mut() = Some(budget.clone()));
    let _reset = Reset;
    f()
}

/// wasmer's default tunables (so code compiled elsewhere with them matches), with limited memories.
#[derive(Default)]
pub struct LimitingTunables {
    base: BaseTunables,
}

impl Tunables for LimitingTunables {
    fn memory_style(&self, memory: &MemoryType) -> MemoryStyle {
        self.base.memory_style(memory)
    }

    fn table_style(&self, table: &TableType) -> TableStyle {
        self.base.table_style(table)
    }

    fn create_host_memory(
        &self,
        ty: &MemoryType,
        style: &MemoryStyle,
    ) -> Result<VMMemory, MemoryError> {
        let budget = current_budget()?;
        budget.one_memory()?;
        let memory = self.base.create_host_memory(ty, style)?;
        LimitedMemory::wrap(memory, budget)
    }

    unsafe fn create_vm_memory(
        &self,
        ty: &MemoryType,
        style: &MemoryStyle,
        vm_definition_location: NonNull<VMMemoryDefinition>,
    ) -> Result<VMMemory, MemoryError> {
        let budget = current_budget()?;
        budget.one_memory()?;
        let memory = if *style == MemoryStyle::Static {
            // SAFETY: wasmer's caller hands over the instance's definition, valid for as long
            // as the memory it is about to own.
            unsafe { KeptLinearMemory::take(ty, vm_definition_location)? }
        } else {
            // SAFETY: forwarded unchanged from wasmer's caller, which upholds the contract.
            unsafe {
                self.base
                    .create_vm_memory(ty, style, vm_definition_location)?
            }
        };
        LimitedMemory::wrap(memory, budget)
    }

    fn create_host_table(&self, ty: &TableType, style: &TableStyle) -> Result<VMTable, String> {
        self.base.create_host_table(&bounded(ty)?, style)
    }

    unsafe fn create_vm_table(
        &self,
        ty: &TableType,
        style: &TableStyle,
        vm_definition_location: NonNull<VMTableDefinition>,
    ) -> Result<VMTable, String> {
        let ty = bounded(ty)?;
        // SAFETY: forwarded from wasmer's caller, which upholds the contract; only the table's
        // maximum is lowered, which wasmer enforces on growth.
        unsafe {
            self.base
                .create_vm_table(&ty, style, vm_definition_location)
        }
    }
}

/// `ty` with its maximum held to the executor's ([`MAX_TABLE_ELEMENTS`]): past it `table.grow`
/// fails instead of allocating; a larger initial size is refused.
fn bounded(ty: &TableType) -> Result<TableType, String> {
    if ty.minimum > MAX_TABLE_ELEMENTS {
        return Err(format!(
            "a table of {} elements is larger than this executor allows ({MAX_TABLE_ELEMENTS})",
            ty.minimum
        ));
    }
    let mut ty = *ty;
    ty.maximum = Some(
        ty.maximum
            .map_or(MAX_TABLE_ELEMENTS, |m| m.min(MAX_TABLE_ELEMENTS)),
    );
    Ok(ty)
}

fn current_budget() -> Result<MemoryBudget, MemoryError> {
    INSTANTIATING
        .with(|cell| cell.borrow().clone())
        .ok_or_else(|| MemoryError::Generic("a memory was created outside an activation".into()))
}

/// A linear memory of the static style: a [`KeptMemory`] of that shape (the 32-bit index space
/// reserved, then the offset guard), described to the instance's code by the definition in its
/// context.
#[derive(Debug)]
struct KeptLinearMemory {
    memory: KeptMemory,
    ty: MemoryType,
    definition: NonNull<VMMemoryDefinition>,
}

// SAFETY: the definition lives in the instance's context, which owns this memory and which
// wasmer serialises access to through its store; the memory itself is a plain mapping.
unsafe impl Send for KeptLinearMemory {}
// SAFETY: as above; `&self` methods only read.
unsafe impl Sync for KeptLinearMemory {}

impl KeptLinearMemory {
    /// # Safety
    ///
    /// `definition` is the instance's own, valid for the life of the memory made here.
    unsafe fn take(
        ty: &MemoryType,
        definition: NonNull<VMMemoryDefinition>,
    ) -> Result<VMMemory, MemoryError> {
        let bound = MemoryStyle::static_bound();
        if ty.minimum > bound
            || ty
                .maximum
                .is_some_and(|max| max < ty.minimum || max > bound)
        {
            return Err(MemoryError::InvalidMemory {
                reason: format!("a memory of {:?} to {:?} pages", ty.minimum, ty.maximum),
            });
        }
        let reservation = bound.bytes().0;
        let guard = usize::try_from(MemoryStyle::static_offset_guard_size())
            .map_err(|e| MemoryError::Generic(e.to_string()))?;
        let (mapped, minimum) = (reservation + guard, ty.minimum.bytes().0);
        let memory =
            KeptMemory::take(reservation, mapped, minimum).map_err(MemoryError::Generic)?;
        let mut engine_memory = KeptLinearMemory {
            memory,
            ty: *ty,
            definition,
        };
        engine_memory.describe();
        Ok(VMMemory(Box::new(engine_memory)))
    }

    /// Tells the instance's code where the memory is and how large.
    fn describe(&mut self) {
        // SAFETY: the instance's definition, which only this memory writes (see `take`).
        let definition = unsafe { self.definition.as_mut() };
        definition.base = self.memory.base().as_ptr();
        definition.current_length = self.memory.size();
    }

    fn grow_to(&mut self, pages: Pages) -> Result<(), MemoryError> {
        if self.ty.maximum.is_some_and(|max| pages > max) || pages > MemoryStyle::static_bound() {
            return Err(MemoryError::CouldNotGrow {
                current: self.size(),
                attempted_delta: Pages(pages.0.saturating_sub(self.size().0)),
            });
        }
        self.memory
            .resize(pages.bytes().0)
            .map_err(MemoryError::Generic)?;
        self.describe();
        Ok(())
    }
}

impl LinearMemory for KeptLinearMemory {
    fn ty(&self) -> MemoryType {
        MemoryType {
            minimum: self.size(),
            ..self.ty
        }
    }

    fn size(&self) -> Pages {
        Pages((self.memory.size() / wasmer::WASM_PAGE_SIZE) as u32)
    }

    fn style(&self) -> MemoryStyle {
        MemoryStyle::Static
    }

    fn grow(&mut self, delta: Pages) -> Result<Pages, MemoryError> {
        let current = self.size();
        let new = current
            .checked_add(delta)
            .ok_or(MemoryError::CouldNotGrow {
                current,
                attempted_delta: delta,
            })?;
        self.grow_to(new)?;
        Ok(current)
    }

    fn grow_at_least(&mut self, min_size: u64) -> Result<(), MemoryError> {
        let pages = Pages::try_from(Bytes(
            usize::try_from(min_size.next_multiple_of(PAGE_BYTES))
                .map_err(|e| MemoryError::Generic(e.to_string()))?,
        ))
        .map_err(|e| MemoryError::Generic(format!("{e:?}")))?;
        if pages > self.size() {
            self.grow_to(pages)?;
        }
        Ok(())
    }

    fn vmmemory(&self) -> NonNull<VMMemoryDefinition> {
        self.definition
    }

    fn try_clone(&self) -> Result<Box<dyn LinearMemory + Send + Sync + 'static>, MemoryError> {
        Err(MemoryError::MemoryNotShared)
    }

    fn copy(&self) -> Result<Box<dyn LinearMemory + Send + Sync + 'static>, MemoryError> {
        Err(MemoryError::UnsupportedOperation {
            message: "a kept memory is not copied".into(),
        })
    }
}

const PAGE_BYTES: u64 = wasmer::WASM_PAGE_SIZE as u64;

fn bytes(pages: Pages) -> u64 {
    u64::from(pages.0) * PAGE_BYTES
}

/// A linear memory that cannot grow past its activation's budget.
#[derive(Debug)]
pub struct LimitedMemory {
    inner: VMMemory,
    budget: MemoryBudget,
}

impl LimitedMemory {
    fn wrap(inner: VMMemory, budget: MemoryBudget) -> Result<VMMemory, MemoryError> {
        let size = inner.size();
        if bytes(size) > budget.limit_bytes {
            budget.refuse();
            return Err(MemoryError::MinimumMemoryTooLarge {
                min_requested: size,
                max_allowed: Pages((budget.limit_bytes / PAGE_BYTES) as u32),
            });
        }
        Ok(VMMemory(Box::new(LimitedMemory { inner, budget })))
    }
}

impl LinearMemory for LimitedMemory {
    fn ty(&self) -> MemoryType {
        self.inner.ty()
    }

    fn size(&self) -> Pages {
        self.inner.size()
    }

    fn style(&self) -> MemoryStyle {
        self.inner.style()
    }

    fn grow(&mut self, delta: Pages) -> Result<Pages, MemoryError> {
        let current = self.inner.size();
        if bytes(current) + bytes(delta) > self.budget.limit_bytes {
            self.budget.refuse();
            return Err(MemoryError::CouldNotGrow {
                current,
                attempted_delta: delta,
            });
        }
        self.inner.grow(delta)
    }

    fn grow_at_least(&mut self, min_size: u64) -> Result<(), MemoryError> {
        if min_size > self.budget.limit_bytes {
            self.budget.refuse();
            return Err(MemoryError::CouldNotGrow {
                current: self.inner.size(),
                attempted_delta: Pages(0),
            });
        }
        self.inner.grow_at_least(min_size)
    }

    fn reset(&mut self) -> Result<(), MemoryError> {
        self.inner.reset()
    }

    fn vmmemory(&self) -> NonNull<VMMemoryDefinition> {
        self.inner.vmmemory()
    }

    fn try_clone(&self) -> Result<Box<dyn LinearMemory + Send + Sync + 'static>, MemoryError> {
        let inner = VMMemory(LinearMemory::try_clone(&self.inner)?);
        Ok(Box::new(LimitedMemory {
            inner,
            budget: self.budget.clone(),
        }))
    }

    unsafe fn initialize_with_data(
        &self,
        start: usize,
        data: &[u8],
    ) -> Result<(), wasmer::sys::vm::Trap> {
        // SAFETY: forwarded unchanged; the caller upholds the contract.
        unsafe { self.inner.initialize_with_data(start, data) }
    }

    fn copy(&self) -> Result<Box<dyn LinearMemory + Send + Sync + 'static>, MemoryError> {
        let inner = VMMemory(LinearMemory::copy(&self.inner)?);
        Ok(Box::new(LimitedMemory {
            inner,
            budget: self.budget.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_past_the_budget_is_refused_and_remembered() {
        let budget = MemoryBudget::new(2 * 65536);
        let ty = MemoryType::new(1, None, false);
        let tunables = LimitingTunables::default();
        let style = tunables.memory_style(&ty);
        assert!(
            tunables.create_host_memory(&ty, &style).is_err(),
            "no budget, no memory"
        );
        let mut memory = with_budget(&budget, || tunables.create_host_memory(&ty, &style)).unwrap();
        assert_eq!(memory.grow(Pages(1)).unwrap(), Pages(1));
        assert!(!budget.exceeded());
        assert!(memory.grow(Pages(1)).is_err());
        assert!(budget.exceeded());

        let small = MemoryBudget::new(65536);
        let big = MemoryType::new(2, None, false);
        assert!(with_budget(&small, || tunables.create_host_memory(&big, &style)).is_err());
        assert!(small.exceeded());
    }

    #[test]
    fn one_memory_per_activation_and_bounded_tables() {
        let budget = MemoryBudget::new(1 << 20);
        let tunables = LimitingTunables::default();
        let ty = MemoryType::new(1, None, false);
        let style = tunables.memory_style(&ty);
        with_budget(&budget, || {
            tunables.create_host_memory(&ty, &style).unwrap();
            assert!(
                tunables.create_host_memory(&ty, &style).is_err(),
                "a second memory"
            );
        });
        let open = TableType::new(wasmer::Type::FuncRef, 1, None);
        assert_eq!(bounded(&open).unwrap().maximum, Some(MAX_TABLE_ELEMENTS));
        let small = TableType::new(wasmer::Type::FuncRef, 1, Some(8));
        assert_eq!(bounded(&small).unwrap().maximum, Some(8));
        let huge = TableType::new(wasmer::Type::FuncRef, MAX_TABLE_ELEMENTS + 1, None);
        assert!(bounded(&huge).is_err());
    }
}

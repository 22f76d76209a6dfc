//! Resolves a module's imports against what this executor provides: WASI preview 1 always, the
//! host functions of a capability (`openwhisk::http_get`/`http_read` of `net_access`) only to
//! containers granted it. Checked once at /init (names and types, so a module that cannot link
//! is refused there), built per activation for its store.

use std::{sync::Arc, time::Instant};

use wasmer::{Engine, ExternType, FunctionEnv, Imports, Module, Store};

use super::{deadline::RunClock, host::RunEnv, http_import, wasi};
use wasm_executor::{
    backend::PrepareError,
    capability::{CapabilityId, GrantSet, provider_of},
    net::IMPORT_MODULE,
    pool::CpuSlot,
};

/// The host function for `module::name`, when this container provides it.
fn provide(
    store: &mut Store,
    env: &FunctionEnv<RunEnv>,
    module: &str,
    name: &str,
    granted: GrantSet,
) -> Option<wasmer::Function> {
    if module == wasi::MODULE {
        return wasi::function(store, env, name);
    }
    if module == IMPORT_MODULE
        && let Some(twin) = http_import::twin(store, env, name)
    {
        return Some(twin);
    }
    let capability = provider_of(module, name).filter(|c| granted.contains(c.id))?;
    match capability.id {
        // Through WASI's preopened directories.
        CapabilityId::Dir => None,
        CapabilityId::NetAccess => http_import::function(store, env, name),
    }
}

/// Refuses a module importing anything this container does not provide, or with another type.
pub fn check(engine: &Engine, module: &Module, granted: GrantSet) -> Result<(), PrepareError> {
    let mut store = Store::new(engine.clone());
    let env = FunctionEnv::new(
        &mut store,
        RunEnv {
            memory: None,
            wasi: wasi::WasiCtx::probe(),
            net: None,
            held: Default::default(),
            clock: Arc::new(RunClock::new(Instant::now())),
            cpu: CpuSlot::detached(),
        },
    );
    for import in module.imports() {
        let missing = || PrepareError::missing_import(import.module(), import.name());
        let ExternType::Function(wanted) = import.ty() else {
            return Err(missing());
        };
        let func = provide(&mut store, &env, import.module(), import.name(), granted)
            .ok_or_else(missing)?;
        let provided = func.ty(&store);
        if &provided != wanted {
            return Err(PrepareError::Invalid(format!(
                "the module imports `{}::{}` with type {wanted}, but this executor provides {provided}",
                import.module(),
                import.name()
            )));
        }
    }
    Ok(())
}

/// The imports of one activation, bound to its store and environment.
pub fn build(
    store: &mut Store,
    env: &FunctionEnv<RunEnv>,
    module: &Module,
    granted: GrantSet,
) -> Result<Imports, String> {
    let mut imports = Imports::new();
    for import in module.imports() {
        let func = provide(store, env, import.module(), import.name(), granted)
            .ok_or_else(|| format!("`{}::{}` is not provided", import.module(), import.name()))?;
        imports.define(import.module(), import.name(), func);
    }
    Ok(imports)
}

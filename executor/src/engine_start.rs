//! An engine started once per tenant: the state of an engine instance after its export
//! `start-engine` (CPython's interpreter up, nothing of an action loaded), which every
//! pre-initialisation of the tenant's actions then starts from instead of starting the engine
//! again.
//!
//! One per namespace, not one per executor: what an engine draws at its start (CPython's
//! string-hash secret) is then never shared between tenants, as two OpenWhisk containers do
//! not share it. The most recently used starts are kept, a few per engine.

use std::sync::{Arc, Mutex};

use wasmparser::{ExternalKind, Parser, Payload};

use crate::backend::InstanceState;

/// The export that starts an engine without loading an action.
pub const START_EXPORT: &str = "start-engine";
/// Started states an engine keeps (each is the engine's started heap, a few MB for CPython).
const KEPT_STARTS: usize = 8;

/// Whether `wasm` exports a function `start-engine`.
pub fn exports_start(wasm: &[u8]) -> bool {
    Parser::new(0).parse_all(wasm).any(|payload| match payload {
        Ok(Payload::ExportSection(exports)) => exports.into_iter().any(|export| {
            export.is_ok_and(|e| e.name == START_EXPORT && e.kind == ExternalKind::Func)
        }),
        _ => false,
    })
}

/// An engine's started states by namespace, the most recently used last.
#[derive(Default)]
pub struct StartedEngines {
    kept: Mutex<Vec<(String, Arc<InstanceState>)>>,
}

impl StartedEngines {
    /// The started state of `namespace`'s engine, started now by `start` unless kept. Two
    /// /inits of a namespace that arrive together may both start it; one of the two is kept.
    pub fn get_or_start(
        &self,
        namespace: &str,
        start: impl FnOnce() -> anyhow::Result<InstanceState>,
    ) -> anyhow::Result<Arc<InstanceState>> {
        if let Some(started) = self.touch(namespace) {
            return Ok(started);
        }
        let started = Arc::new(start()?);
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|(name, _)| name != namespace);
        if kept.len() >= KEPT_STARTS {
            kept.remove(0);
        }
        kept.push((namespace.to_owned(), Arc::clone(&started)));
        Ok(started)
    }

    /// The kept start of `namespace`, moved to the most recently used end.
    fn touch(&self, namespace: &str) -> Option<Arc<InstanceState>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let at = kept.iter().position(|(name, _)| name == namespace)?;
        let entry = kept.remove(at);
        let started = Arc::clone(&entry.1);
        kept.push(entry);
        Some(started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(pages: u64) -> InstanceState {
        InstanceState {
            memory_pages: pages,
            ..InstanceState::default()
        }
    }

    #[test]
    fn each_namespace_starts_once_and_the_least_recently_used_go_first() {
        let engines = StartedEngines::default();
        let mut starts = 0;
        for round in 0..2 {
            for n in 0..KEPT_STARTS as u64 {
                let got = engines
                    .get_or_start(&format!("ns{n}"), || {
                        starts += 1;
                        Ok(snapshot(n))
                    })
                    .unwrap();
                assert_eq!(got.memory_pages, n, "round {round}");
            }
        }
        assert_eq!(starts, KEPT_STARTS);
        // ns0 is used again, so a new namespace pushes out ns1.
        engines.get_or_start("ns0", || unreachable!()).unwrap();
        engines.get_or_start("new", || Ok(snapshot(99))).unwrap();
        let mut restarted = false;
        engines
            .get_or_start("ns1", || {
                restarted = true;
                Ok(snapshot(1))
            })
            .unwrap();
        assert!(restarted);
        engines.get_or_start("new", || unreachable!()).unwrap();
    }

    #[test]
    fn a_failed_start_is_not_kept() {
        let engines = StartedEngines::default();
        assert!(engines.get_or_start("a", || anyhow::bail!("no")).is_err());
        assert!(engines.get_or_start("a", || Ok(snapshot(3))).is_ok());
    }

    #[test]
    fn the_start_export_is_found_by_name_and_kind() {
        let with = wat::parse_str(r#"(module (func (export "start-engine")))"#).unwrap();
        let global =
            wat::parse_str(r#"(module (global (export "start-engine") i32 (i32.const 0)))"#)
                .unwrap();
        let without = wat::parse_str(r#"(module (func (export "_start")))"#).unwrap();
        assert!(exports_start(&with));
        assert!(!exports_start(&global));
        assert!(!exports_start(&without));
    }
}

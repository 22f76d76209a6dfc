//! Exports every mutable global a module defines (as `__ow_global_N`), so that a snapshot of an
//! instance can read them and write them into the next one: the one change a language engine
//! needs before the executor pre-initialises actions on it. Every other section is copied as
//! it is.

use anyhow::{Context, bail};
use wasm_encoder::{ExportKind, ExportSection, Module, RawSection};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

/// The export name of the module's global `index`.
pub fn global_export_name(index: u32) -> String {
    format!("__ow_global_{index}")
}

/// `wasm` with an export for every mutable global it defines and does not export yet.
pub fn export_mutable_globals(wasm: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut imported_globals = 0u32;
    let mut mutable = Vec::new();
    let mut exports: Option<(ExportSection, Vec<u32>)> = None;
    let mut sections = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.context("the engine is not a valid WebAssembly module")?;
        match &payload {
            Payload::ImportSection(imports) => {
                for import in imports.clone().into_imports() {
                    if let TypeRef::Global(_) = import.context("reading the imports")?.ty {
                        imported_globals += 1;
                    }
                }
            }
            Payload::GlobalSection(globals) => {
                for (i, global) in globals.clone().into_iter().enumerate() {
                    if global.context("reading the globals")?.ty.mutable {
                        mutable.push(imported_globals + i as u32);
                    }
                }
            }
            Payload::ExportSection(reader) => {
                let mut section = ExportSection::new();
                let mut exported = Vec::new();
                for export in reader.clone() {
                    let export = export.context("reading the exports")?;
                    let kind = match export.kind {
                        ExternalKind::Func | ExternalKind::FuncExact => ExportKind::Func,
                        ExternalKind::Table => ExportKind::Table,
                        ExternalKind::Memory => ExportKind::Memory,
                        ExternalKind::Global => {
                            exported.push(export.index);
                            ExportKind::Global
                        }
                        ExternalKind::Tag => ExportKind::Tag,
                    };
                    section.export(export.name, kind, export.index);
                }
                exports = Some((section, exported));
                sections.push(None);
                continue;
            }
            _ => {}
        }
        if let Some((id, range)) = payload.as_section() {
            sections.push(Some(RawSection {
                id,
                data: &wasm[range],
            }));
        }
    }
    let Some((mut export_section, exported)) = exports else {
        bail!("the engine exports nothing: it is not a WASI command");
    };
    for index in mutable.into_iter().filter(|i| !exported.contains(i)) {
        export_section.export(&global_export_name(index), ExportKind::Global, index);
    }
    let mut module = Module::new();
    for section in &sections {
        match section {
            Some(raw) => module.section(raw),
            None => module.section(&export_section),
        };
    }
    Ok(module.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutable_globals_are_exported_and_nothing_else_changes() {
        let wasm = wat::parse_str(
            r#"(module
                 (import "env" "g" (global $imported (mut i32)))
                 (global $fixed i32 (i32.const 1))
                 (global $sp (mut i32) (i32.const 1024))
                 (global $counter (mut i64) (i64.const 0))
                 (memory (export "memory") 1)
                 (func (export "_start") (global.set $sp (i32.const 5)))
                 (export "counter" (global $counter)))"#,
        )
        .unwrap();
        let out = export_mutable_globals(&wasm).unwrap();
        let mut names = Vec::new();
        for payload in Parser::new(0).parse_all(&out) {
            if let Payload::ExportSection(reader) = payload.unwrap() {
                for export in reader {
                    let export = export.unwrap();
                    names.push((export.name.to_owned(), export.index));
                }
            }
        }
        // Global 0 is imported, 1 immutable, 3 already exported: only 2 gains a name.
        assert_eq!(
            names,
            [
                ("memory".to_owned(), 0),
                ("_start".to_owned(), 0),
                ("counter".to_owned(), 3),
                (global_export_name(2), 2)
            ]
        );
        wasmparser::Validator::new().validate_all(&out).unwrap();
    }

    #[test]
    fn what_is_not_a_module_is_an_error() {
        assert!(export_mutable_globals(b"\0asm\x01\0\0\0\x07garbage").is_err());
    }
}

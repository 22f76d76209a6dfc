//! A language engine as the executor runs it: every mutable global it defines exported (as
//! `__ow_global_N`), so that a snapshot of an instance can read them and write them into the
//! next one, and its active data segments lifted out, so that what they put in memory reaches
//! every instance as a memory image (the executor's `backend/memory_image.rs`) instead of being copied in at
//! each instantiation. Every other section is copied as it is.

use anyhow::{Context, bail};
use wasm_encoder::{ConstExpr, DataSection, ExportKind, ExportSection, Module, RawSection};
use wasmparser::{DataKind, ExternalKind, Operator, Parser, Payload, TypeRef};

/// The export name of the module's global `index`.
pub fn global_export_name(index: u32) -> String {
    format!("__ow_global_{index}")
}

/// An engine ready for the executor: the module to load and the data its instances start with.
pub struct EngineModule {
    pub wasm: Vec<u8>,
    /// What the module's active data segments write into its memory, in their order: (memory
    /// offset, bytes). The module keeps each segment, empty, so that indices stay.
    pub data: Vec<(usize, Vec<u8>)>,
}

/// `wasm` with an export for every mutable global it defines and does not export yet, and its
/// active data segments emptied into [`EngineModule::data`]. The engine must define its one
/// memory itself, without a start function (nothing may run before its image is in place), and
/// place its data at constant offsets.
pub fn prepare(wasm: &[u8]) -> anyhow::Result<EngineModule> {
    let mut imported_globals = 0u32;
    let mut mutable = Vec::new();
    let mut exports: Option<(ExportSection, Vec<u32>)> = None;
    let mut memories = 0u32;
    let mut data = Vec::new();
    let mut sections = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.context("the engine is not a valid WebAssembly module")?;
        match &payload {
            Payload::ImportSection(imports) => {
                for import in imports.clone().into_imports() {
                    match import.context("reading the imports")?.ty {
                        TypeRef::Global(_) => imported_globals += 1,
                        TypeRef::Memory(_) => {
                            bail!("the engine imports its memory; it must define it")
                        }
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(reader) => memories += reader.count(),
            Payload::StartSection { .. } => {
                bail!("the engine has a start function; nothing may run before its memory image")
            }
            Payload::GlobalSection(globals) => {
                for (i, global) in globals.clone().into_iter().enumerate() {
                    if global.context("reading the globals")?.ty.mutable {
                        mutable.push(imported_globals + i as u32);
                    }
                }
            }
            Payload::ExportSection(reader) => {
                exports = Some(exports_of(reader.clone())?);
                sections.push(Section::Exports);
                continue;
            }
            Payload::DataSection(reader) => {
                let mut section = DataSection::new();
                for segment in reader.clone() {
                    let segment = segment.context("reading the data segments")?;
                    match segment.kind {
                        DataKind::Passive => section.passive(segment.data.iter().copied()),
                        DataKind::Active {
                            memory_index,
                            offset_expr,
                        } => {
                            let offset = constant_offset(&offset_expr)?;
                            data.push((offset, segment.data.to_vec()));
                            section.active(memory_index, &ConstExpr::i32_const(offset as i32), [])
                        }
                    };
                }
                sections.push(Section::Data(section));
                continue;
            }
            _ => {}
        }
        if let Some((id, range)) = payload.as_section() {
            sections.push(Section::Raw(RawSection {
                id,
                data: &wasm[range],
            }));
        }
    }
    if memories != 1 {
        bail!("the engine defines {memories} memories; it must define exactly one");
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
            Section::Raw(raw) => module.section(raw),
            Section::Exports => module.section(&export_section),
            Section::Data(data) => module.section(data),
        };
    }
    Ok(EngineModule {
        wasm: module.finish(),
        data,
    })
}

/// A section of the rewritten module: copied, or one of the two rewritten.
enum Section<'a> {
    Raw(RawSection<'a>),
    Exports,
    /// The data section with its active segments emptied.
    Data(DataSection),
}

/// The export section as it is, and the indices of the globals it exports.
fn exports_of(
    reader: wasmparser::ExportSectionReader<'_>,
) -> anyhow::Result<(ExportSection, Vec<u32>)> {
    let mut section = ExportSection::new();
    let mut exported = Vec::new();
    for export in reader {
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
    Ok((section, exported))
}

/// The offset of an active segment, which must be an `i32.const`.
fn constant_offset(expr: &wasmparser::ConstExpr<'_>) -> anyhow::Result<usize> {
    let mut operators = expr.get_operators_reader();
    let offset = match operators
        .read()
        .context("reading a data segment's offset")?
    {
        Operator::I32Const { value } => value as u32 as usize,
        _ => bail!("the engine places data at an offset that is not a constant"),
    };
    match operators
        .read()
        .context("reading a data segment's offset")?
    {
        Operator::End => Ok(offset),
        _ => bail!("the engine places data at an offset that is not a constant"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exports_of_module(wasm: &[u8]) -> Vec<(String, u32)> {
        let mut names = Vec::new();
        for payload in Parser::new(0).parse_all(wasm) {
            if let Payload::ExportSection(reader) = payload.unwrap() {
                for export in reader {
                    let export = export.unwrap();
                    names.push((export.name.to_owned(), export.index));
                }
            }
        }
        names
    }

    #[test]
    fn mutable_globals_are_exported_and_active_data_lifted_out() {
        let wasm = wat::parse_str(
            r#"(module
                 (import "env" "g" (global $imported (mut i32)))
                 (global $fixed i32 (i32.const 1))
                 (global $sp (mut i32) (i32.const 1024))
                 (global $counter (mut i64) (i64.const 0))
                 (memory (export "memory") 1)
                 (data (i32.const 16) "abc")
                 (data $later "passive")
                 (data (i32.const 70000) "\01\02")
                 (func (export "_start")
                   (memory.init $later (i32.const 0) (i32.const 0) (i32.const 7))
                   (global.set $sp (i32.const 5)))
                 (export "counter" (global $counter)))"#,
        )
        .unwrap();
        let engine = prepare(&wasm).unwrap();
        // Global 0 is imported, 1 immutable, 3 already exported: only 2 gains a name.
        assert_eq!(
            exports_of_module(&engine.wasm),
            [
                ("memory".to_owned(), 0),
                ("_start".to_owned(), 0),
                ("counter".to_owned(), 3),
                (global_export_name(2), 2)
            ]
        );
        assert_eq!(
            engine.data,
            [(16, b"abc".to_vec()), (70000, vec![1, 2])],
            "the active segments, in order"
        );
        let mut segments = Vec::new();
        for payload in Parser::new(0).parse_all(&engine.wasm) {
            if let Payload::DataSection(reader) = payload.unwrap() {
                for segment in reader {
                    let segment = segment.unwrap();
                    segments.push((
                        matches!(segment.kind, DataKind::Active { .. }),
                        segment.data,
                    ));
                }
            }
        }
        assert_eq!(
            segments,
            [(true, &b""[..]), (false, &b"passive"[..]), (true, &b""[..])],
            "every segment keeps its index; the passive one its bytes"
        );
        wasmparser::Validator::new()
            .validate_all(&engine.wasm)
            .unwrap();
    }

    #[test]
    fn engines_the_executor_cannot_give_an_image_are_refused_by_reason() {
        let cases = [
            (
                r#"(module (import "env" "m" (memory 1)))"#,
                "imports its memory",
            ),
            (
                r#"(module (memory 1) (func $f) (start $f))"#,
                "start function",
            ),
            (
                r#"(module (global $g i32 (i32.const 8)) (memory 1) (data (global.get $g) "x"))"#,
                "not a constant",
            ),
            (r#"(module (func (export "_start")))"#, "exactly one"),
        ];
        for (text, reason) in cases {
            let error = prepare(&wat::parse_str(text).unwrap()).err().unwrap();
            assert!(format!("{error:#}").contains(reason), "{text}: {error:#}");
        }
    }

    #[test]
    fn what_is_not_a_module_is_an_error() {
        assert!(prepare(b"\0asm\x01\0\0\0\x07garbage").is_err());
    }
}

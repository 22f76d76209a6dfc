//! What the WAMR backend and its precompiler check in a module before WAMR loads it.
//!
//! - A start function: WAMR runs it (like `_initialize`) inside instantiation, before the
//!   executor holds the instance its watchdog would terminate, so a looping start function
//!   could never be stopped. WASI commands from Rust or C compilers never have one (they use
//!   `_start`).
//! - The size of its tables: WAMR allocates a table's initial size at instantiation, however
//!   large, so a module declaring a table of hundreds of millions of elements would take
//!   gigabytes of the executor's memory outside any limit.

/// Ids of sections in the binary format.
const TABLE_SECTION: u8 = 4;
const START_SECTION: u8 = 8;

/// The most elements a table may declare (as on the executor's other backends).
pub const MAX_TABLE_ELEMENTS: u32 = 65_536;

/// The payload of every section, in order. Malformed input ends the walk early: the loader
/// refuses it with a better message.
fn sections(wasm: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut rest = wasm.get(8..).unwrap_or_default();
    std::iter::from_fn(move || {
        let (&id, after_id) = rest.split_first()?;
        let (size, after_size) = leb128_u32(after_id)?;
        let payload = after_size.get(..size as usize)?;
        rest = &after_size[size as usize..];
        Some((id, payload))
    })
}

/// True when `wasm` (a binary module) has a start section.
pub fn declares_start_function(wasm: &[u8]) -> bool {
    sections(wasm).any(|(id, _)| id == START_SECTION)
}

/// The largest initial size among the tables `wasm` defines, if it defines any that can be
/// read (a table written in a form WAMR does not load is left to its loader).
pub fn largest_table(wasm: &[u8]) -> Option<u32> {
    let (_, payload) = sections(wasm).find(|(id, _)| *id == TABLE_SECTION)?;
    let (count, mut rest) = leb128_u32(payload)?;
    let mut largest = None;
    for _ in 0..count {
        // A reference type (funcref 0x70, externref 0x6f), then limits: 0x00 min | 0x01 min max.
        let (&reftype, after) = rest.split_first()?;
        if reftype != 0x70 && reftype != 0x6f {
            return largest;
        }
        let (&flags, after) = after.split_first()?;
        let (min, after) = leb128_u32(after)?;
        rest = match flags {
            0x00 => after,
            0x01 => leb128_u32(after)?.1,
            _ => return largest,
        };
        largest = Some(largest.map_or(min, |l: u32| l.max(min)));
    }
    largest
}

/// Refuses a module whose table is larger than [`MAX_TABLE_ELEMENTS`].
pub fn check_tables(wasm: &[u8]) -> Result<(), String> {
    match largest_table(wasm) {
        Some(size) if size > MAX_TABLE_ELEMENTS => Err(format!(
            "the module declares a table of {size} elements; this executor allows {MAX_TABLE_ELEMENTS}"
        )),
        _ => Ok(()),
    }
}

/// An unsigned LEB128 u32 and the bytes after it.
fn leb128_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let mut value: u32 = 0;
    for (index, &byte) in bytes.iter().enumerate().take(5) {
        value |= u32::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[index + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &[u8] = b"\0asm\x01\0\0\0";

    #[test]
    fn reads_declared_table_sizes() {
        // table section: two tables, funcref min 3, externref min 100000 max 200000.
        let tables = [
            HEADER,
            b"\x04\x0c\x02\x70\x00\x03\x6f\x01\xa0\x8d\x06\xc0\x9a\x0c",
        ]
        .concat();
        assert_eq!(largest_table(&tables), Some(100_000));
        assert!(
            check_tables(&tables)
                .unwrap_err()
                .contains("100000 elements")
        );
        let small = [HEADER, b"\x04\x04\x01\x70\x00\x07"].concat();
        assert_eq!(largest_table(&small), Some(7));
        assert!(check_tables(&small).is_ok());
        assert_eq!(largest_table(HEADER), None);
    }

    #[test]
    fn finds_the_start_section() {
        // type section (one `() -> ()` type), function section, start section naming func 0.
        let with_start = [
            HEADER,
            b"\x01\x04\x01\x60\0\0",
            b"\x03\x02\x01\0",
            b"\x08\x01\0",
        ]
        .concat();
        assert!(declares_start_function(&with_start));
        let without = [HEADER, b"\x01\x04\x01\x60\0\0", b"\x03\x02\x01\0"].concat();
        assert!(!declares_start_function(&without));
        assert!(!declares_start_function(HEADER));
        assert!(!declares_start_function(b"\0asm"));
        assert!(!declares_start_function(
            &[HEADER, b"\x01\xff\xff\xff\xff\xff"].concat()
        ));
    }
}

//! Whether a module declares a start function. WAMR runs it (like `_initialize`) inside
//! instantiation, before the executor holds the instance its watchdog would terminate, so a
//! looping start function could never be stopped: the WAMR backend and its precompiler refuse
//! such modules. WASI commands from Rust or C compilers never have one (they use `_start`).

/// The id of the start section in the binary format.
const START_SECTION: u8 = 8;

/// True when `wasm` (a binary module) has a start section. Malformed input yields false: the
/// loader refuses it with a better message.
pub fn declares_start_function(wasm: &[u8]) -> bool {
    let Some(mut rest) = wasm.get(8..) else {
        return false;
    };
    while let Some((&id, after_id)) = rest.split_first() {
        let Some((size, after_size)) = leb128_u32(after_id) else {
            return false;
        };
        if id == START_SECTION {
            return true;
        }
        match after_size.get(size as usize..) {
            Some(next) => rest = next,
            None => return false,
        }
    }
    false
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

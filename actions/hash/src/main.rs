//! `hash`: CPU-bound repeated BLAKE3 hashing.
//!
//! `{"iterations": N, "input": "text"}` → `{"digest": "<hex>", "iterations": N}` where the
//! digest is `h = blake3(input)` followed by N rounds of `h = blake3(h)` over the 32-byte digest.

use openwhisk::{Error, Value, json, params};

/// Default rounds: about 100 ms for the native release binary on the reference machine
/// (see README.md, "hash: default iterations").
const DEFAULT_ITERATIONS: u64 = 1_200_000;

fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

fn digest(input: &[u8], iterations: u64) -> [u8; 32] {
    let mut h = *blake3::hash(input).as_bytes();
    for _ in 0..iterations {
        h = *blake3::hash(&h).as_bytes();
    }
    h
}

fn hash(p: Value) -> Result<Value, Error> {
    let iterations = params::u64_or(&p, "iterations", DEFAULT_ITERATIONS)?;
    let input = params::str_or(&p, "input", "openwhisk")?;
    Ok(json!({
        "digest": to_hex(&digest(input.as_bytes(), iterations)),
        "iterations": iterations,
    }))
}

openwhisk::main!(hash);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_iterations_is_plain_blake3() {
        // BLAKE3 of the empty input, from the reference test vectors.
        assert_eq!(
            to_hex(&digest(b"", 0)),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        assert_eq!(digest(b"x", 2), digest(blake3::hash(b"x").as_bytes(), 1));
    }
}

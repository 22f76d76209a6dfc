//! `prime`: sieve of Eratosthenes up to `limit` (default 1 000 000) →
//! `{"limit": …, "count": …, "largest": …}`.

use openwhisk::{Error, Value, error, json, params};

const DEFAULT_LIMIT: u64 = 1_000_000;
/// One byte per number: keep the sieve within a few hundred MB.
const MAX_LIMIT: u64 = 400_000_000;

/// Number of primes ≤ `limit` and the largest of them.
fn sieve(limit: usize) -> (usize, Option<usize>) {
    if limit < 2 {
        return (0, None);
    }
    let mut composite = vec![false; limit + 1];
    let mut i = 2;
    while i * i <= limit {
        if !composite[i] {
            let mut j = i * i;
            while j <= limit {
                composite[j] = true;
                j += i;
            }
        }
        i += 1;
    }
    let mut count = 0;
    let mut largest = None;
    for (n, &c) in composite.iter().enumerate().skip(2) {
        if !c {
            count += 1;
            largest = Some(n);
        }
    }
    (count, largest)
}

fn prime(p: Value) -> Result<Value, Error> {
    let limit = params::u64_or(&p, "limit", DEFAULT_LIMIT)?;
    if limit > MAX_LIMIT {
        return Err(error!("limit must be at most {MAX_LIMIT}"));
    }
    let limit_usize = usize::try_from(limit).map_err(|_| error!("limit too large"))?;
    let (count, largest) = sieve(limit_usize);
    Ok(json!({ "limit": limit, "count": count, "largest": largest }))
}

openwhisk::main!(prime);

#[cfg(test)]
mod tests {
    #[test]
    fn counts() {
        assert_eq!(super::sieve(1), (0, None));
        assert_eq!(super::sieve(2), (1, Some(2)));
        assert_eq!(super::sieve(100), (25, Some(97)));
        assert_eq!(super::sieve(1_000_000), (78_498, Some(999_983)));
    }
}

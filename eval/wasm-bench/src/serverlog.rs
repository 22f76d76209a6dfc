//! Reads the executor's own timings out of its log: `initialized … took_us=N` (info level)
//! per /init and `activation ended … took_us=N` (debug level) per /run, by container id, and
//! the steps of each module load (`module loaded … decode_us verify_us load_us`, info level).

use std::collections::HashMap;

/// Durations (µs) per container id, in log order.
#[derive(Debug, Default)]
pub struct ServerTimes {
    pub inits: HashMap<String, Vec<u64>>,
    pub runs: HashMap<String, Vec<u64>>,
    /// One per module the executor loaded (the first /init of an upload), in log order.
    pub loads: Vec<LoadSteps>,
}

/// How long the steps of one module load took (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSteps {
    /// base64, zip and envelope framing (portable Wasm: also its hash).
    pub decode_us: u64,
    /// The envelope's signature and payload hash (portable Wasm: nothing).
    pub verify_us: u64,
    /// The runtime's part: deserialize, or compile or read the cache.
    pub load_us: u64,
}

pub fn parse(log: &str) -> ServerTimes {
    let mut times = ServerTimes::default();
    for raw in log.lines() {
        let line = strip_ansi(raw);
        if line.contains("module loaded") {
            let us = |key| field(&line, key).and_then(|v| v.parse().ok());
            if let (Some(decode_us), Some(verify_us), Some(load_us)) =
                (us("decode_us="), us("verify_us="), us("load_us="))
            {
                times.loads.push(LoadSteps {
                    decode_us,
                    verify_us,
                    load_us,
                });
            }
            continue;
        }
        let target = if line.contains("activation ended") {
            &mut times.runs
        } else if line.contains(" initialized") {
            &mut times.inits
        } else {
            continue;
        };
        if let (Some(container), Some(took)) =
            (field(&line, "container="), field(&line, "took_us="))
            && let Ok(us) = took.parse()
        {
            target.entry(container.to_owned()).or_default().push(us);
        }
    }
    times
}

/// The value after `key` (quoted or not) up to the next character that cannot be part of an
/// id or number.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(key)? + key.len();
    let rest = &line[start..];
    let rest = rest.strip_prefix('"').unwrap_or(rest);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_init_and_run_lines() {
        let log = "2026-01-01T00:00:00Z  INFO init{container=pre-3}: wasm_executor::service: initialized container=\"pre-3\" took_us=812\n\
                   2026-01-01T00:00:00Z DEBUG run{container=\"w\" activation=}: wasm_executor::service: activation ended outcome=\"success\" took_us=17\n\
                   \u{1b}[2m2026\u{1b}[0m DEBUG run{container=w activation=}: wasm_executor::service: activation ended outcome=\"invalid_result\" took_us=9\n\
                   2026-01-01T00:00:00Z  INFO init{container=pre-4}: wasm_executor::service: module loaded code_chars=1334432 decode_us=459 verify_us=557 load_us=500\n";
        let t = parse(log);
        assert_eq!(t.inits["pre-3"], vec![812]);
        assert_eq!(t.runs["w"], vec![17, 9]);
        assert_eq!(
            t.loads,
            vec![LoadSteps {
                decode_us: 459,
                verify_us: 557,
                load_us: 500
            }]
        );
    }
}

//! OpenWhisk action SDK for WebAssembly (WASI preview 1) guests and their native twins.
//!
//! An action is one function from its parameters to a result or an error:
//!
//! ```no_run
//! use openwhisk::{Error, Value, json};
//!
//! fn handler(params: Value) -> Result<Value, Error> {
//!     let name = openwhisk::params::str_or(&params, "name", "world")?;
//!     Ok(json!({ "greeting": format!("Hello, {name}!") }))
//! }
//!
//! openwhisk::main!(handler); // same as: fn main() { openwhisk::run(handler) }
//! ```
//!
//! [`run`] implements the guest side of the executor's ABI: the parameters are the JSON text of
//! `argv[1]` (or, when there is no `argv[1]`, all of stdin; empty means `{}`), the result is
//! printed as one line of compact JSON on stdout (the executor takes the last non-empty stdout
//! line as the result), and an `Err` becomes the application error `{"error": "<message>"}`
//! with exit status 0. Everything else the action prints, on stdout before the result or on
//! stderr, is a log line.
//!
//! The same source builds for `wasm32-wasip1` and natively for the host, where the binary
//! follows the same convention (OpenWhisk's native binary actions).

pub mod context;
pub mod http;
pub mod params;
pub mod random;

use std::fmt;
use std::io::{Read, Write};

pub use context::Context;
pub use serde_json::{self, Value, json};

/// An action's failure: its message becomes the `error` field of the result.
///
/// Any [`std::error::Error`] converts into it, so `?` works on I/O, JSON and HTTP errors.
pub struct Error {
    message: String,
}

impl Error {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// The message reported to the caller.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?})", self.message)
    }
}

impl<E: std::error::Error> From<E> for Error {
    fn from(err: E) -> Self {
        Error::new(err.to_string())
    }
}

/// Builds an [`Error`] from a format string: `return Err(openwhisk::error!("bad {x}"))`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => {
        $crate::Error::new(::std::format!($($arg)*))
    };
}

/// Defines `fn main` running `handler` through [`run`]: `openwhisk::main!(handler);`.
#[macro_export]
macro_rules! main {
    ($handler:expr) => {
        fn main() {
            $crate::run($handler)
        }
    };
}

/// Exports an extra entry point `name` that runs `handler` through [`run`].
///
/// When an action is created with `main` set to `name`, the executor calls this export instead
/// of `_start` (the OpenWhisk `--main` option). Natively the symbol exists but nothing calls it.
#[macro_export]
macro_rules! export {
    ($name:ident, $handler:expr) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn $name() {
            $crate::run($handler)
        }
    };
}

/// Runs one activation: reads the parameters, calls `handler`, prints the result line.
///
/// Never panics on bad input: unreadable or malformed parameters become an application error.
pub fn run<F>(handler: F)
where
    F: FnOnce(Value) -> Result<Value, Error>,
{
    let result = read_params().and_then(handler);
    emit_result(result);
}

/// Reads the activation's parameters as [`run`] does (`argv[1]`, else stdin, empty → `{}`).
pub fn read_params() -> Result<Value, Error> {
    let text = match std::env::args_os().nth(1) {
        Some(arg) => arg
            .into_string()
            .map_err(|_| Error::new("invalid parameters: argv[1] is not UTF-8"))?,
        None => {
            let mut buf = String::new();
            std::io::stdin()
                .read_to_string(&mut buf)
                .map_err(|e| error!("invalid parameters: cannot read stdin: {e}"))?;
            buf
        }
    };
    parse_params(&text)
}

/// Parses parameter text: empty (or blank) text is the empty object.
pub fn parse_params(text: &str) -> Result<Value, Error> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text).map_err(|e| error!("invalid parameters: {e}"))
}

/// Serialises a handler's outcome to the result value: `Err(e)` is `{"error": e}`.
pub fn result_value(result: Result<Value, Error>) -> Value {
    match result {
        Ok(value) => value,
        Err(err) => json!({ "error": err.message }),
    }
}

/// Prints the outcome as the activation's result: one line of compact JSON on stdout.
pub fn emit_result(result: Result<Value, Error>) {
    let value = result_value(result);
    // Compact JSON never contains a raw newline (strings escape it), so this is one line.
    let line = value.to_string();
    let mut out = std::io::stdout().lock();
    // Nothing useful can be done if stdout is gone; the executor reports the missing result.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_params_are_an_object() {
        assert_eq!(parse_params("").unwrap(), json!({}));
        assert_eq!(parse_params(" \n").unwrap(), json!({}));
        assert_eq!(parse_params("{\"a\":1}").unwrap(), json!({"a": 1}));
        assert!(parse_params("{").is_err());
    }

    #[test]
    fn errors_become_error_objects() {
        let v = result_value(Err(error!("bad {}", 1)));
        assert_eq!(v, json!({"error": "bad 1"}));
        let io: Error = std::io::Error::other("boom").into();
        assert_eq!(io.message(), "boom");
    }

    #[test]
    fn result_is_one_line() {
        let v = json!({"s": "a\nb"});
        assert!(!v.to_string().contains('\n'));
    }
}

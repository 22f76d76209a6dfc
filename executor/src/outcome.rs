//! Turns how a guest ended plus what it wrote into OpenWhisk's answer: the result object, or
//! the developer error OpenWhisk expects, and the activation's log lines.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::{backend::GuestExit, logs::Captured};

pub const NOT_A_DICTIONARY: &str = "The action did not return a dictionary.";

/// The answer to one /run.
#[derive(Debug)]
pub enum RunResponse {
    /// 200 with this JSON, an object or an array, checked but passed on as the action wrote it
    /// (an object with `error` is an application error).
    Result(Box<RawValue>),
    /// 502 with `{"error": …}`: the action failed.
    ActionError { message: String, outcome: Outcome },
}

/// Outcome labels for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    ApplicationError,
    InvalidResult,
    Exited,
    Trapped,
    TimedOut,
    MemoryExhausted,
    HostFailure,
}

impl Outcome {
    /// Every outcome, in the order of its metrics counter.
    pub const ALL: [Outcome; 8] = [
        Outcome::Success,
        Outcome::ApplicationError,
        Outcome::InvalidResult,
        Outcome::Exited,
        Outcome::Trapped,
        Outcome::TimedOut,
        Outcome::MemoryExhausted,
        Outcome::HostFailure,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::ApplicationError => "application_error",
            Outcome::InvalidResult => "invalid_result",
            Outcome::Exited => "exited",
            Outcome::Trapped => "trapped",
            Outcome::TimedOut => "timeout",
            Outcome::MemoryExhausted => "memory_exhausted",
            Outcome::HostFailure => "host_failure",
        }
    }
}

pub fn interpret(exit: GuestExit, captured: &mut Captured, timeout_ms: u64) -> RunResponse {
    let failure = |message: String, outcome| RunResponse::ActionError { message, outcome };
    match exit {
        GuestExit::Exited(0) if captured.result_overflow.is_some() => {
            let (length, max) = captured.result_overflow.unwrap_or_default();
            failure(
                format!(
                    "The action produced a response that exceeded the allowed length: {length} > {max} bytes."
                ),
                Outcome::InvalidResult,
            )
        }
        GuestExit::Exited(0) => {
            // Validated as JSON without building it in memory: the text goes out as written.
            let parsed = captured
                .result_line()
                .map(str::trim)
                .filter(|line| line.starts_with('{') || line.starts_with('['))
                .and_then(|line| RawValue::from_string(line.to_owned()).ok());
            match parsed {
                Some(result) => {
                    captured.drop_result_line();
                    RunResponse::Result(result)
                }
                // Anything else stays in the logs, where the developer sees what was printed.
                None => failure(NOT_A_DICTIONARY.into(), Outcome::InvalidResult),
            }
        }
        // A guest that ends with an error of its own says why as its result line (as the
        // language engines do: OpenWhisk's runtimes answer these with 502 and that `error`).
        GuestExit::Exited(code) => match captured.result_line().and_then(error_text) {
            Some(error) => {
                captured.drop_result_line();
                failure(error, Outcome::Exited)
            }
            None => failure(
                format!("The action exited with status {code} and produced no result."),
                Outcome::Exited,
            ),
        },
        GuestExit::Trapped(trap) => {
            let first = trap.lines().next().unwrap_or("trap").to_owned();
            captured.push_stderr(&trap);
            failure(format!("The action trapped: {first}"), Outcome::Trapped)
        }
        GuestExit::TimedOut => failure(
            format!("The action exceeded its time limits of {timeout_ms} milliseconds."),
            Outcome::TimedOut,
        ),
        GuestExit::MemoryExhausted => failure(
            "The action exhausted its memory and was aborted.".into(),
            Outcome::MemoryExhausted,
        ),
        GuestExit::HostFailure(reason) => failure(
            format!("The executor could not run the action: {reason}"),
            Outcome::HostFailure,
        ),
    }
}

/// The text of a result line `{"error": "…"}`.
fn error_text(line: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct ErrorText {
        error: String,
    }
    serde_json::from_str::<ErrorText>(line.trim())
        .ok()
        .map(|e| e.error)
}

/// The `error` field of a result object, skimmed without building the rest.
#[derive(Deserialize)]
struct ErrorField {
    error: Option<serde::de::IgnoredAny>,
}

impl RunResponse {
    pub fn outcome(&self) -> Outcome {
        match self {
            RunResponse::Result(raw) if raw.get().starts_with('{') => {
                match serde_json::from_str::<ErrorField>(raw.get()) {
                    Ok(ErrorField { error: Some(_) }) => Outcome::ApplicationError,
                    _ => Outcome::Success,
                }
            }
            RunResponse::Result(_) => Outcome::Success,
            RunResponse::ActionError { outcome, .. } => *outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::{OutputCapture, Stream};

    fn captured(stdout: &str) -> Captured {
        let capture = OutputCapture::new(1 << 20, 1 << 20);
        capture.write(Stream::Stdout, stdout.as_bytes());
        capture.finish()
    }

    #[test]
    fn exit_zero_with_an_object_is_the_result() {
        let mut c = captured("log\n{\"a\":1}\n");
        let r = interpret(GuestExit::Exited(0), &mut c, 100);
        assert!(matches!(&r, RunResponse::Result(v) if v.get() == "{\"a\":1}"));
        assert_eq!(r.outcome(), Outcome::Success);
        assert_eq!(c.lines.len(), 1, "only the log line stays");
    }

    #[test]
    fn a_failed_exit_with_an_error_line_fails_with_that_error() {
        let mut c = captured("log\n{\"error\":\"An error has occurred: boom\"}\n");
        let r = interpret(GuestExit::Exited(1), &mut c, 100);
        assert!(
            matches!(&r, RunResponse::ActionError { message, .. } if message == "An error has occurred: boom"),
            "{r:?}"
        );
        assert_eq!(
            c.lines.len(),
            1,
            "the error line is the answer, not a log line"
        );
        let mut c = captured("{\"other\":1}\n");
        let r = interpret(GuestExit::Exited(3), &mut c, 100);
        assert!(
            matches!(&r, RunResponse::ActionError { message, .. } if message.contains("status 3"))
        );
    }

    #[test]
    fn an_error_field_is_an_application_error_not_a_failure() {
        let mut c = captured("{\"error\":\"no\"}");
        let r = interpret(GuestExit::Exited(0), &mut c, 100);
        assert_eq!(r.outcome(), Outcome::ApplicationError);
    }

    #[test]
    fn failures_have_openwhisk_texts() {
        let cases = [
            (GuestExit::Exited(0), "[1,", NOT_A_DICTIONARY.to_owned()),
            (GuestExit::Exited(0), "7", NOT_A_DICTIONARY.to_owned()),
            (
                GuestExit::Exited(3),
                "{}",
                "The action exited with status 3 and produced no result.".to_owned(),
            ),
            (
                GuestExit::TimedOut,
                "",
                "The action exceeded its time limits of 250 milliseconds.".to_owned(),
            ),
            (
                GuestExit::MemoryExhausted,
                "",
                "The action exhausted its memory and was aborted.".to_owned(),
            ),
        ];
        for (exit, out, expected) in cases {
            let mut c = captured(out);
            match interpret(exit, &mut c, 250) {
                RunResponse::ActionError { message, .. } => assert_eq!(message, expected),
                other => panic!("expected an error, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_result_beyond_the_limit_is_refused_with_its_length() {
        let capture = OutputCapture::new(1 << 20, 16);
        capture.write(Stream::Stdout, b"{\"big\":\"0123456789abcdef\"}\n");
        let mut c = capture.finish();
        match interpret(GuestExit::Exited(0), &mut c, 100) {
            RunResponse::ActionError { message, .. } => assert_eq!(
                message,
                "The action produced a response that exceeded the allowed length: 26 > 16 bytes."
            ),
            other => panic!("{other:?}"),
        }
        // Arrays pass, whitespace around a result is dropped, text inside it is kept as is.
        let mut c = captured(" [1, {\"error\":0}] ");
        let r = interpret(GuestExit::Exited(0), &mut c, 100);
        assert!(matches!(&r, RunResponse::Result(v) if v.get() == "[1, {\"error\":0}]"));
        assert_eq!(r.outcome(), Outcome::Success);
    }

    #[test]
    fn a_trap_keeps_its_details_in_the_logs() {
        let mut c = captured("");
        let r = interpret(
            GuestExit::Trapped("wasm trap: unreachable\nbacktrace line".into()),
            &mut c,
            1,
        );
        assert!(
            matches!(r, RunResponse::ActionError { ref message, .. } if message == "The action trapped: wasm trap: unreachable")
        );
        assert_eq!(c.lines.len(), 2);
    }
}

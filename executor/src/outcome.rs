//! Turns how a guest ended plus what it wrote into OpenWhisk's answer: the result object, or
//! the developer error OpenWhisk expects, and the activation's log lines.

use serde_json::Value;

use crate::{backend::GuestExit, logs::Captured};

pub const NOT_A_DICTIONARY: &str = "The action did not return a dictionary.";

/// The answer to one /run.
#[derive(Debug)]
pub enum RunResponse {
    /// 200 with this JSON (an object with `error` is an application error).
    Result(Value),
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
        GuestExit::Exited(0) => {
            let parsed = captured
                .result_line()
                .and_then(|line| serde_json::from_str::<Value>(line.trim()).ok());
            match parsed {
                Some(result @ (Value::Object(_) | Value::Array(_))) => {
                    captured.drop_result_line();
                    RunResponse::Result(result)
                }
                // Anything else stays in the logs, where the developer sees what was printed.
                _ => failure(NOT_A_DICTIONARY.into(), Outcome::InvalidResult),
            }
        }
        GuestExit::Exited(code) => failure(
            format!("The action exited with status {code} and produced no result."),
            Outcome::Exited,
        ),
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

impl RunResponse {
    pub fn outcome(&self) -> Outcome {
        match self {
            RunResponse::Result(Value::Object(map)) if map.contains_key("error") => Outcome::ApplicationError,
            RunResponse::Result(_) => Outcome::Success,
            RunResponse::ActionError { outcome, .. } => *outcome,
        }
    }
}

//! The conformance suite: OpenWhisk's runtime contract and the executor's guarantees, checked
//! over HTTP against the executor binary of whichever backend this build enables.

use wasm_executor_testkit as harness;

mod artifacts;
mod bad_input;
mod capabilities;
mod guest_execution;
mod hostile;
mod isolation;
mod javascript;
mod limits;
mod observability;
mod python;
mod runtime_contract;
mod sharing;
mod toolchains;

//! How a host function stops its guest instead of returning to it.

use thiserror::Error;

/// Why a host function ends the activation instead of returning to the guest. It travels
/// through wasmer as a user error of the trap and is recovered by downcasting.
#[derive(Debug, Error)]
pub enum HostStop {
    #[error("the guest exited with status {0}")]
    Exit(i32),
    #[error("the activation's deadline passed")]
    Deadline,
    #[error("{0}")]
    Fault(String),
}

//! WASI preview 1 as the host sees it where the executor implements it itself (wasmer's WASI):
//! the ABI (error numbers, flags, structure layouts) and bounds-checked guest-memory decoding.

pub mod abi;
pub mod guest;

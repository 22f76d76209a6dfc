//! Instance snapshots, as the backends capture and restore them: the types and their file form
//! live with the decoders (`wasm_executor_decode::snapshot`), since a snapshot file is what a
//! stranger may upload.

pub use wasm_executor_decode::snapshot::*;

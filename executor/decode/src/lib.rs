//! The executor's decoders of what strangers send it: OpenWhisk's /init and /run bodies, the
//! action's code, and the arguments a guest passes in its memory to the host calls the executor
//! implements itself. No server and no Wasm runtime: the executor library re-exports these
//! modules, and the fuzz targets build only this crate.

pub mod code;
pub mod host_limits;
pub mod poll;
pub mod protocol;
pub mod snapshot;
pub mod snapshot_file;
pub mod sources;
pub mod wasi;

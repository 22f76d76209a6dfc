//! Build-time helper of `wamr-runtime-sys` and `wamr-compiler-sys`: finds the WAMR source tree
//! (never committed here; it comes from the pinned `wamrx-sys` package, see [`locate`]) and turns
//! the shared [`wamr_profile`] into the `WAMR_BUILD_*` switches both libraries are built with, so
//! the runtime always accepts exactly what the compiler emits.

mod locate;
mod switches;

pub use locate::{Sources, locate};
pub use switches::{shared_switches, wamr_target};

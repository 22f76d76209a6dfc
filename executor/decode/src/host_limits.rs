//! Bounds every backend puts on one host call, whatever the guest passes: so that no single
//! call holds a thread, or memory outside the guest's limit, for long.

/// Most iovecs one read or write takes (POSIX's `IOV_MAX` on Linux); more is `EINVAL`.
pub const MAX_IOVECS: u32 = 1024;

/// Most bytes one read or write moves; longer requests are served partially, which every WASI
/// read/write caller already handles.
pub const MAX_IO_BYTES: u32 = 16 << 20;

/// Random bytes produced between two checks of the deadline (and, on an async worker, two
/// yields) while `random_get` fills a buffer.
pub const RANDOM_CHUNK: usize = 1 << 20;

/// Descriptors one activation may hold open at once, stdin, stdout, stderr and the preopened
/// directory included; opening more is `EMFILE`.
pub const MAX_OPEN_DESCRIPTORS: usize = 256;

/// What the guest may open itself: [`MAX_OPEN_DESCRIPTORS`] less stdio and the preopen.
pub const MAX_GUEST_OPENED: usize = MAX_OPEN_DESCRIPTORS - 4;

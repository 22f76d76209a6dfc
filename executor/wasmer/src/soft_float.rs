//! The two soft-float helpers wasmer's VM lists among the library calls compiled code may make
//! (`__negsf2`, `__negdf2`), for ARM builds whose standard library comes without compiler-rt's
//! C sources (Debian's, built from source with `-Zbuild-std`, see scripts/cross.sh). Defined
//! here they are linked instead of compiler-rt's; on aarch64 a negation is one instruction.

/// `-a` for `f32`.
#[unsafe(no_mangle)]
pub extern "C" fn __negsf2(a: f32) -> f32 {
    -a
}

/// `-a` for `f64`.
#[unsafe(no_mangle)]
pub extern "C" fn __negdf2(a: f64) -> f64 {
    -a
}

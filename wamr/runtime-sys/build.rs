//! Builds WAMR's runtime library with WAMR's own cmake build (its root `CMakeLists.txt`, target
//! `vmlib`) from the sources `wamr-source` locates, configured by the shared profile plus the
//! runtime's own switches, and generates Rust declarations of `wasm_export.h` with bindgen.

use std::{env, fs, path::PathBuf};

use anyhow::{Context, bail};

/// Where Debian's `libsimde-dev` puts SIMDe, which the fast interpreter uses for SIMD (WAMR's
/// cmake would otherwise try to download it).
const SIMDE_PREFIX: &str = "/usr/include";

/// glibc's 64-bit file offsets, inode numbers and `time_t` on 32-bit targets.
const LARGE_FILES_AND_TIME: [&str; 2] = ["-D_FILE_OFFSET_BITS=64", "-D_TIME_BITS=64"];

fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-changed=build.rs");
    let sources = wamr_source::locate()?;
    let out = PathBuf::from(env::var("OUT_DIR").context("OUT_DIR")?);
    let arch = env::var("CARGO_CFG_TARGET_ARCH").context("CARGO_CFG_TARGET_ARCH")?;
    let pointer_width =
        env::var("CARGO_CFG_TARGET_POINTER_WIDTH").context("CARGO_CFG_TARGET_POINTER_WIDTH")?;
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        bail!("the WAMR backend is built for Linux only");
    }
    if arch == "arm" && !env::var("TARGET").is_ok_and(|t| t.starts_with("armv7")) {
        bail!(
            "on 32-bit ARM the WAMR backend is built for armv7 with hardware floating point (armv7-unknown-linux-gnueabihf)"
        );
    }
    let profile = wamr_profile::TargetProfile::for_arch(&arch)?;
    if profile.simd
        && !PathBuf::from(SIMDE_PREFIX)
            .join("simde/wasm/simd128.h")
            .is_file()
    {
        bail!(
            "SIMDe headers are missing: install Debian's libsimde-dev (scripts/install-wamr-deps.sh)"
        );
    }

    let mut cmake = cmake::Config::new(&sources.root);
    for (name, value) in wamr_source::shared_switches(profile) {
        cmake.define(name, value);
    }
    cmake
        .define("WAMR_BUILD_PLATFORM", "linux")
        .define("WAMR_BUILD_TARGET", wamr_source::wamr_target(&arch)?)
        // Portable modules run on the fast interpreter, precompiled ones as AOT code; no JIT
        // and so no LLVM in the executor.
        .define("WAMR_BUILD_INTERP", "1")
        .define("WAMR_BUILD_FAST_INTERP", "1")
        .define("WAMR_BUILD_AOT", "1")
        .define("WAMR_BUILD_JIT", "0")
        .define("WAMR_BUILD_FAST_JIT", "0")
        .define(
            "WAMR_DISABLE_HW_BOUND_CHECK",
            if profile.hardware_bounds_checks {
                "0"
            } else {
                "1"
            },
        )
        // Native stack overflows of guest code are caught by checks in the code (see the
        // profile), so WAMR neither touches nor guards the workers' stacks.
        .define(
            "WAMR_DISABLE_STACK_HW_BOUND_CHECK",
            if wamr_profile::NATIVE_STACK_GUARD_PAGES {
                "0"
            } else {
                "1"
            },
        )
        .define("WAMR_BUILD_MINI_LOADER", "0")
        .define("WAMR_BUILD_DUMP_CALL_STACK", "0")
        .define("WAMR_BUILD_CUSTOM_NAME_SECTION", "0")
        // The thread manager (kept for termination) would otherwise split a guest's shadow
        // stack into five, four of them for threads it never spawns.
        .cflag("-DWASM_ENABLE_HEAP_AUX_STACK_ALLOCATION=1")
        .define("FETCHCONTENT_SOURCE_DIR_SIMDE", SIMDE_PREFIX)
        .define("FETCHCONTENT_FULLY_DISCONNECTED", "ON")
        // WAMR's Debug build adds assertions and slows the interpreter several times.
        .profile("Release")
        .build_target("vmlib");
    // On 32-bit targets glibc's file and time interfaces are 32-bit unless asked otherwise:
    // WASI's `fd_readdir` and `path_filestat_get` then fail with EOVERFLOW on an inode number or
    // a file size beyond 32 bits, and clocks end in 2038. WAMR's WASI layer asks for both.
    if pointer_width == "32" {
        for define in LARGE_FILES_AND_TIME {
            cmake.cflag(define);
        }
    }
    // With guard-page bounds checks the executor makes linear memories itself (its allocator,
    // called with each allocation's usage): reservations of WAMR's shape that keep a language
    // engine's image mapped between instances (executor/wamr/src/ffi/linear_memory.rs).
    if profile.hardware_bounds_checks {
        cmake.cflag("-DWASM_MEM_ALLOC_WITH_USAGE=1");
    }
    println!(
        "cargo:rustc-env=WAMR_LINEAR_MEMORIES_BY_EMBEDDER={}",
        u8::from(profile.hardware_bounds_checks)
    );
    let built = cmake.build().join("build");

    // A name of our own, so no other copy of WAMR on a search path can stand in for it.
    let lib_dir = out.join("lib");
    fs::create_dir_all(&lib_dir)?;
    fs::copy(built.join("libiwasm.a"), lib_dir.join("libwamr_runtime.a"))
        .with_context(|| format!("copying libiwasm.a from {}", built.display()))?;
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=wamr_runtime");
    for system in ["m", "dl", "pthread"] {
        println!("cargo:rustc-link-lib=dylib={system}");
    }

    let mut bindings = bindgen::Builder::default();
    if pointer_width == "32" {
        bindings = bindings.clang_args(LARGE_FILES_AND_TIME);
    }
    bindings
        .header(
            sources
                .include_dir()
                .join("wasm_export.h")
                .to_string_lossy(),
        )
        .clang_arg(format!("-I{}", sources.include_dir().display()))
        .allowlist_function("wasm_runtime_.*|wasm_func_.*|wasm_memory_.*|wasm_func_type_.*")
        .allowlist_type(
            "NativeSymbol|RunningMode|log_level_t|enlarge_memory_error_reason_t|wasm_.*",
        )
        .allowlist_var("WASM_.*")
        .prepend_enum_name(false)
        .derive_default(true)
        .generate_comments(false)
        .generate()
        .context("generating bindings for wasm_export.h")?
        .write_to_file(out.join("bindings.rs"))
        .context("writing bindings.rs")?;

    println!("cargo:rustc-env=WAMR_VERSION={}", sources.version);
    println!("cargo:rustc-env=WAMR_SOURCES={}", sources.origin);
    Ok(())
}

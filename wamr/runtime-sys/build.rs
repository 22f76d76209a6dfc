//! Builds WAMR's runtime library with WAMR's own cmake build (its root `CMakeLists.txt`, target
//! `vmlib`) from the sources `wamr-source` locates, configured by the shared profile plus the
//! runtime's own switches, and generates Rust declarations of `wasm_export.h` with bindgen.

use std::{env, fs, path::PathBuf};

use anyhow::{Context, bail};

/// Where Debian's `libsimde-dev` puts SIMDe, which the fast interpreter uses for SIMD (WAMR's
/// cmake would otherwise try to download it).
const SIMDE_PREFIX: &str = "/usr/include";

fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-changed=build.rs");
    let sources = wamr_source::locate()?;
    let out = PathBuf::from(env::var("OUT_DIR").context("OUT_DIR")?);
    let arch = env::var("CARGO_CFG_TARGET_ARCH").context("CARGO_CFG_TARGET_ARCH")?;
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        bail!("the WAMR backend is built for Linux only");
    }
    if wamr_profile::SIMD
        && !PathBuf::from(SIMDE_PREFIX)
            .join("simde/wasm/simd128.h")
            .is_file()
    {
        bail!(
            "SIMDe headers are missing: install Debian's libsimde-dev (scripts/install-wamr-deps.sh)"
        );
    }

    let mut cmake = cmake::Config::new(&sources.root);
    for (name, value) in wamr_source::shared_switches() {
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
            if wamr_profile::HARDWARE_BOUNDS_CHECKS {
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

    bindgen::Builder::default()
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

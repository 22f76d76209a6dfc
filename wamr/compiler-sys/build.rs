//! Builds WAMR's AOT compiler library from the sources `wamr-source` locates, with this crate's
//! own CMakeLists.txt, against a Debian LLVM (`/usr/lib/llvm-19`, or `WAMR_LLVM_PREFIX`), and
//! generates Rust declarations of the compiler API with bindgen.
//!
//! One deliberate change to WAMR's code, made on a copy in OUT_DIR (the unpacked package stays
//! as cargo verified it): WAMR's compiler emits its termination check — a read of the execution
//! environment's terminate flag at every loop back-edge and call — only into modules with a
//! shared memory, i.e. multi-threaded ones, because only those have other threads to stop them.
//! The executor's watchdog must stop any looping guest at its deadline, so the check is emitted
//! into every module. The runtime library needs no change: it already sets that flag when
//! `wasm_runtime_terminate` is called.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, bail};

/// The Debian LLVM the compiler builds against unless `WAMR_LLVM_PREFIX` names another (WAMR
/// 2.4.3's compiler builds with Debian's LLVM 15, 19 and 22; 19 matches the guests' clang-19).
const DEFAULT_LLVM_PREFIX: &str = "/usr/lib/llvm-19";

/// The file changed, the exact text replaced, and its replacement.
const TERMINATION_PATCH: (&str, &str, &str) = (
    "core/iwasm/compilation/aot_emit_control.c",
    "    if (!is_shared_memory) {\n        return true;\n    }\n",
    "    /* wasm-executor: emit the check in every module (wamr/compiler-sys/build.rs) */\n    (void)is_shared_memory;\n",
);

fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=CMakeLists.txt");
    println!("cargo:rerun-if-env-changed=WAMR_LLVM_PREFIX");
    let sources = wamr_source::locate()?;
    let out = PathBuf::from(env::var("OUT_DIR").context("OUT_DIR")?);
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR")?);
    let host_arch = env::var("CARGO_CFG_TARGET_ARCH").context("CARGO_CFG_TARGET_ARCH")?;
    let llvm_prefix = env::var_os("WAMR_LLVM_PREFIX")
        .map_or_else(|| PathBuf::from(DEFAULT_LLVM_PREFIX), PathBuf::from);
    let llvm_dir = llvm_prefix.join("lib/cmake/llvm");
    if !llvm_dir.join("LLVMConfig.cmake").is_file() {
        bail!(
            "no LLVM development files under {}: install Debian's llvm-19-dev (scripts/install-wamr-deps.sh) or set WAMR_LLVM_PREFIX",
            llvm_prefix.display()
        );
    }
    let llvm_version = llvm_version(&llvm_prefix)?;
    let patched = patch_emit_control(&sources.root, &out)?;

    let mut cmake = cmake::Config::new(&manifest_dir);
    // The compiler library runs here; what each compilation targets is set per call.
    let profile = wamr_profile::TargetProfile::for_arch(&host_arch)?;
    for (name, value) in wamr_source::shared_switches(profile) {
        cmake.define(name, value);
    }
    cmake
        .define("WAMR_ROOT", &sources.root)
        .define("WAMR_BUILD_TARGET", wamr_source::wamr_target(&host_arch)?)
        .define("WAMR_PATCHED_EMIT_CONTROL", &patched)
        .define("LLVM_DIR", &llvm_dir)
        .profile("Release");
    let installed = cmake.build();

    println!(
        "cargo:rustc-link-search=native={}",
        installed.join("lib").display()
    );
    println!("cargo:rustc-link-lib=static=wamr_compiler");
    // Debian's LLVM is one shared library (libLLVM.so.N in the default library path).
    println!(
        "cargo:rustc-link-search=native={}",
        llvm_prefix.join("lib").display()
    );
    println!("cargo:rustc-link-lib=dylib=LLVM");
    for system in ["stdc++", "m", "dl", "pthread"] {
        println!("cargo:rustc-link-lib=dylib={system}");
    }

    let include = sources.include_dir();
    let wrapper = out.join("wamr_compiler.h");
    fs::write(
        &wrapper,
        "#include \"wasm_export.h\"\n#include \"aot_export.h\"\n",
    )?;
    bindgen::Builder::default()
        .header(wrapper.to_string_lossy())
        .clang_arg(format!("-I{}", include.display()))
        .allowlist_function("aot_.*")
        .allowlist_function(
            "wasm_runtime_(full_init|destroy|load|unload|free|set_log_level|get_version)",
        )
        .allowlist_type("AOTCompOption|RuntimeInitArgs|log_level_t")
        .allowlist_var("AOT_.*")
        .prepend_enum_name(false)
        .derive_default(true)
        .generate_comments(false)
        .generate()
        .context("generating bindings for aot_export.h")?
        .write_to_file(out.join("bindings.rs"))
        .context("writing bindings.rs")?;

    println!("cargo:rustc-env=WAMR_VERSION={}", sources.version);
    println!("cargo:rustc-env=WAMR_SOURCES={}", sources.origin);
    println!("cargo:rustc-env=WAMR_LLVM_VERSION={llvm_version}");
    Ok(())
}

/// Writes the patched copy of the file named by [`TERMINATION_PATCH`] into `out`.
fn patch_emit_control(root: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    let (file, original, replacement) = TERMINATION_PATCH;
    let source = root.join(file);
    let text =
        fs::read_to_string(&source).with_context(|| format!("reading {}", source.display()))?;
    if text.matches(original).count() != 1 {
        bail!(
            "{} no longer contains the shared-memory guard of the termination check exactly once; \
             review TERMINATION_PATCH in wamr/compiler-sys/build.rs for this WAMR version",
            source.display()
        );
    }
    let dir = out.join("patched");
    fs::create_dir_all(&dir)?;
    let patched = dir.join("aot_emit_control.c");
    fs::write(&patched, text.replacen(original, replacement, 1))?;
    Ok(patched)
}

fn llvm_version(prefix: &Path) -> anyhow::Result<String> {
    let output = Command::new(prefix.join("bin/llvm-config"))
        .arg("--version")
        .output()
        .with_context(|| format!("running {}/bin/llvm-config", prefix.display()))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

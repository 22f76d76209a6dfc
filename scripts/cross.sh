#!/usr/bin/env bash
# Builds the executors for ARM boards on this x86_64 machine and runs the conformance suite
# against them under qemu-user. Used by the Makefile (build-aarch64, build-armv7, test-cross)
# and by scripts/test.sh.
#
#   scripts/cross.sh deps                      Debian packages (scripts/prerequisites.sh cross)
#   scripts/cross.sh build TARGET [BACKEND...] the executors (stripped) in target/cross/TRIPLE/
#   scripts/cross.sh test [--all] TARGET [BACKEND...]
#                                              the conformance suite against them, under qemu:
#                                              a third of it by default (the protocol, grants,
#                                              artifacts, bad input, time and memory limits;
#                                              about two minutes per backend), --all for all of it
#
# TARGET is aarch64 (64-bit Raspberry Pi OS and Debian arm64: aarch64-unknown-linux-gnu) or
# armv7 (32-bit Raspberry Pi OS: armv7-unknown-linux-gnueabihf). BACKEND is wasmtime,
# wasmer-headless or wamr, or `precompilers` (the precompile front end and wasmtime's
# precompiler, which need no LLVM); the default is everything the target has: all of these on
# aarch64, WAMR on armv7.
# wasmer runs headless on the board (no LLVM there): its artifacts, like WAMR's AOT ones, are
# precompiled on this host with `wasm-precompile compile --runtime R -- IN.wasm --target TRIPLE`.
#
# Debian's own Rust compiler (rustc-web) builds the standard library for the target from its
# sources (rust-web-src, -Zbuild-std), so rustup needs no extra targets and nothing is
# downloaded besides crates and Debian packages. The suite's test binary runs on this host; only
# the executor is emulated (qemu-user with the target's libraries from the cross packages).
# Timings under emulation say nothing about a board's speed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh

TARGET_DIR="${CARGO_TARGET_DIR:-target}"
# Debian's compiler builds into a target directory of its own: nothing it makes is shared with
# the host's builds, and a host build never waits for its lock (scripts/test.sh runs both at once).
# It is a build cache outside the checkout, shared by every checkout on this machine as cargo's
# registry is (WASM_CROSS_CACHE_DIR, default ~/.cache/wasm-executor/cross-cargo): another clone
# compiles only the workspace's own crates again, not wasmtime, wasmer and the standard library
# for each ARM target. What the builds give, stripped, is in target/cross/TRIPLE/.
CROSS_CARGO_DIR="${WASM_CROSS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-executor/cross-cargo}"

# target_facts TARGET: sets triple, gnu (the cross tools' prefix), qemu and backends.
target_facts() {
    case "$1" in
    aarch64)
        triple=aarch64-unknown-linux-gnu gnu=aarch64-linux-gnu qemu=qemu-aarch64-static
        backends=(wasmtime wasmer-headless wamr precompilers)
        ;;
    armv7)
        triple=armv7-unknown-linux-gnueabihf gnu=arm-linux-gnueabihf qemu=qemu-arm-static
        backends=(wamr)
        ;;
    *) die "unknown target '$1' (aarch64, armv7)" ;;
    esac
    out="$TARGET_DIR/cross/$triple"
}

# package BACKEND: the executor's package (and binary) for a backend.
package() {
    case "$1" in
    wasmtime | wasmer-headless | wamr) echo "wasm-executor-$1" ;;
    *) die "unknown backend '$1' (wasmtime, wasmer-headless, wamr, precompilers)" ;;
    esac
}

# cross_cargo ARGS...: Debian's cargo and rustc for $triple, the standard library built from source
# (never the host build's lint wrapper, scripts/test.sh: clippy's driver is rustup's compiler).
cross_cargo() {
    local var
    var="$(tr 'a-z-' 'A-Z_' <<<"$triple")"
    env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1 \
        "CARGO_TARGET_${var}_LINKER=$gnu-gcc" \
        "CC_${triple//-/_}=$gnu-gcc" "CXX_${triple//-/_}=$gnu-g++" "AR_${triple//-/_}=$gnu-ar" \
        /usr/bin/cargo "$@" --locked --release --target "$triple" --target-dir "$CROSS_CARGO_DIR" \
        -Zbuild-std=std,panic_unwind
}

build() {
    local backend packages=() binaries=() binary
    scripts/prerequisites.sh cross
    mkdir -p "$out"
    for backend in "${backends[@]}"; do
        if [[ "$backend" == precompilers ]]; then
            packages+=(-p wasm-precompile -p wasm-precompile-wasmtime)
            binaries+=(wasm-precompile wasm-precompile-wasmtime)
        else
            packages+=(-p "$(package "$backend")")
            binaries+=("$(package "$backend")")
        fi
    done
    # One cargo invocation for every package, as the host build: each dependency is compiled
    # once, with the features all of them need (separate invocations would compile wasmtime,
    # serde and the rest again for each differing set).
    step "$triple: ${binaries[*]}"
    cross_cargo build "${packages[@]}"
    for binary in "${binaries[@]}"; do
        "$gnu-strip" -o "$out/$binary" "$CROSS_CARGO_DIR/$triple/release/$binary"
    done
    step "$triple: built in $out"
    ls -l "$out"
}

# host_suite BACKEND: the path of this host's conformance test binary (one for every backend;
# built now when missing), with the host precompiler of BACKEND that its harness calls: artifacts
# for the board are made here. wasmer headless uses the wasmer build's precompiler.
host_suite() {
    if [[ "${WASM_EXECUTOR_BUILD:-default}" == all ]]; then
        host_cargo build >&2 # every runtime's precompiler (scripts/test.sh built them)
    else
        case "$1" in
        wasmtime)
            # The whole default build, as `make build` makes it: building the precompiler
            # alone would unify other features and compile wasmtime once more.
            host_cargo build >&2
            ;;
        wasmer-headless) scripts/wasmer.sh build >&2 ;;
        wamr) scripts/wamr.sh build >&2 ;;
        esac
    fi
    scripts/suite.sh path
}

test_suite() {
    local backend suite binary failed=()
    scripts/prerequisites.sh cross
    for backend in "${backends[@]}"; do
        [[ "$backend" == precompilers ]] && continue
        binary="$out/wasm-executor-$backend"
        [[ -x "$binary" ]] || die "$binary is missing: run scripts/cross.sh build ${TARGET_NAME} first"
        suite="$(host_suite "$backend")"
        [[ -x "$suite" ]] || die "no conformance test binary for $backend"
        step "$triple, $backend: the conformance suite against the emulated executor ($qemu)"
        local env_vars=(
            "WASM_EXECUTOR_BIN=$(realpath "$binary")"
            "WASM_EXECUTOR_LAUNCHER=$qemu"
            "QEMU_LD_PREFIX=/usr/$gnu"
            "WASM_EXECUTOR_TARGET=$triple"
            # qemu-user keeps a record of every page of the guest's address space: the wasmtime
            # build's pool for its default 4,096 instances (16 TiB reserved) takes it minutes and
            # gigabytes to set up. 32 cover the suite (16 sleepers at once); tests that set
            # --max-instances override it.
            "WASM_EXECUTOR_MAX_INSTANCES=32"
            # Starting CPython at emulated speed takes tens of seconds, more on a loaded machine,
            # and an engine's start is held to the longest /init: 60 s by default. Tests that
            # set --max-init-ms keep theirs.
            "WASM_EXECUTOR_MAX_INIT_MS=300000"
        )
        local selection=("${SKIPPED[@]}")
        if [[ "$backend" == wasmer-headless ]]; then
            env_vars+=(WASM_EXECUTOR_ARTIFACTS_ONLY=1)
            selection+=("${HEADLESS_SKIPPED[@]}")
        fi
        [[ $ALL == 1 ]] || selection+=("${REDUCED[@]}")
        if ! env "${env_vars[@]}" "$suite" --test-threads 2 "${selection[@]}"; then
            failed+=("$backend")
        fi
    done
    [[ ${#failed[@]} -eq 0 ]] || die "$triple: the conformance suite failed for ${failed[*]}"
}

# The tests that say nothing under emulation, skipped even with --all: qemu's translated-code
# cache counts as the executor's memory, so `hostile::resources` (RSS before and after) measures
# the emulator, and its log flood outlasts the 60 s time limit at emulated speed; the pool and
# blocking-worker execution tests give a loop 300 ms of work, which WAMR's interpreter under
# qemu overruns (the wasmtime build's default, async execution, runs the whole suite anyway).
SKIPPED=(--skip hostile::resources
    --skip guest_execution::blocking_worker_execution_runs_actions_traps_and_time_limits
    --skip guest_execution::pool_execution_runs_actions_traps_and_time_limits)
# The headless wasmer build refuses portable Wasm by design (executor/wasmer/tests checks the
# refusal); the harness precompiles the modules it sends, but these tests send portable code in
# other shapes (zipped, as text, by hand) or check the cache of compiled portable modules.
HEADLESS_SKIPPED=(--skip artifacts::portable_modules_are_compiled_once_and_cached
    --skip bad_input::code_sent_as_text_is_webassembly_text_or_a_request_to_zip_it
    --skip hostile::api::a_unix_socket_is_private_to_the_executors_user
    --skip hostile::api::web_pages_cannot_install_or_run_code
    --skip hostile::grants::a_planted_cache_entry_is_never_loaded
    --skip runtime_contract::add_through_a_zip_like_wsk_uploads_it)
# What runs by default: everything the target's code generation and ABI could break (OpenWhisk's
# protocol, WASI grants, artifacts for the target, malformed input, stopping a guest at its time
# and memory limits, the features today's compilers emit, both language engines and the action
# states made on x86_64 restored on the target), not the scheduling and hostile-tenant tests,
# which are the same code on every target and run natively above.
REDUCED=(runtime_contract:: capabilities:: artifacts:: bad_input:: guest_execution::
    limits::an_infinite_loop_times_out_while_others_are_served
    limits::a_memory_hog_is_stopped_at_the_container_limit
    toolchains::every_feature_of_todays_compilers_runs_portable_and_precompiled
    javascript::javascript_results_errors_and_packages_follow_openwhisk_nodejs_contract
    javascript::a_javascript_action_pre_initialised_into_a_state_file_runs_on_the_executors_engine
    python::a_python_action_pre_initialised_into_a_state_file_runs_on_the_executors_engine)


[[ $# -ge 1 ]] || {
    sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
command="$1"
shift
if [[ "$command" == deps ]]; then
    scripts/prerequisites.sh cross
    exit 0
fi
[[ $# -ge 1 ]] || die "$command needs a TARGET (aarch64, armv7)"
ALL=0
if [[ "$command" == test && "$1" == --all ]]; then
    ALL=1
    shift
fi
[[ $# -ge 1 ]] || die "$command needs a TARGET (aarch64, armv7)"
TARGET_NAME="$1"
shift
target_facts "$TARGET_NAME"
[[ $# -eq 0 ]] || backends=("$@")
for backend in "${backends[@]}"; do
    [[ "$backend" == precompilers ]] || package "$backend" >/dev/null
done
case "$command" in
build) build ;;
test) test_suite ;;
*) die "unknown command '$command' (deps, build, test)" ;;
esac

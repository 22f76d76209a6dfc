#!/usr/bin/env bash
# The wasmer builds: installs what they need, builds, tests. Used by the Makefile
# (build-wasmer, build-wasmer-headless, precompiler-wasmer, test-wasmer) and by scripts/test.sh.
#
#   scripts/wasmer.sh deps            Debian packages for LLVM 22 (scripts/prerequisites.sh wasmer)
#   scripts/wasmer.sh build           wasm-executor-wasmer (LLVM) + wasm-precompile-wasmer
#   scripts/wasmer.sh build-headless  wasm-executor-wasmer-headless (no compiler, artifacts only)
#   scripts/wasmer.sh test            both builds: lints, unit tests, conformance suite, wasmer tests
#   scripts/wasmer.sh test-headless   the headless build: lints, wasmer tests
#
# The binaries land in target/release (one target directory for all runtimes). The executor, the
# precompiler and eval's wasmer-metering are built in one cargo invocation so they share one
# feature resolution, hence one compiled wasmer and LLVM (a separate build of either would
# compile LLVM's bindings again, minutes on 2 cores). The headless build is an invocation of
# its own: its wasmer has no compiler.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO="${CARGO:-cargo}"
OUT="${CARGO_TARGET_DIR:-target}/release"
FULL=(-p wasm-executor-wasmer -p wasm-precompile-wasmer -p wasmer-profile -p wasmer-metering --features wasm-executor-wasmer/llvm)
HEADLESS=(-p wasm-executor-wasmer-headless)
# The wasmer tests against the headless executor: the backend's test crate without LLVM.
HEADLESS_TESTS=(-p wasm-executor-wasmer --features headless --test wasmer)

# shellcheck source=scripts/common.sh
source scripts/common.sh

deps() {
    # llvm-22 comes from Debian 12's security suite.
    scripts/prerequisites.sh wasmer
}

build() {
    deps
    step "wasmer: wasm-executor-wasmer (LLVM) and wasm-precompile-wasmer"
    "$CARGO" build --release --locked "${FULL[@]}"
}

build_headless() {
    step "wasmer: wasm-executor-wasmer-headless"
    "$CARGO" build --release --locked "${HEADLESS[@]}"
}

test_all() {
    # The tests also use the default build's front end and wasmtime precompiler (a wasmtime
    # artifact must be refused); a no-op when `make build` already ran.
    step "wasmer: the default build's precompilers (for artifact tests)"
    host_cargo build
    build
    step "wasmer: lints"
    lints --all-targets "${FULL[@]}"
    step "wasmer: unit tests, wasmer tests"
    "$CARGO" test --release --locked "${FULL[@]}"
    scripts/suite.sh run "$OUT/wasm-executor-wasmer"
    test_headless
}

test_headless() {
    build_headless
    step "wasmer headless: lints and tests"
    lints --all-targets "${HEADLESS[@]}"
    lints "${HEADLESS_TESTS[@]}"
    WASM_EXECUTOR_BIN="$(realpath "$OUT/wasm-executor-wasmer-headless")" \
        "$CARGO" test --release --locked "${HEADLESS_TESTS[@]}"
}

case "${1:-}" in
deps) deps ;;
build) build ;;
build-headless) build_headless ;;
test) test_all ;;
test-headless) test_headless ;;
*)
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac

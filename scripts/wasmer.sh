#!/usr/bin/env bash
# The wasmer builds: installs what they need, builds, tests. Used by the Makefile
# (build-wasmer, build-wasmer-headless, precompiler-wasmer, test-wasmer) and by scripts/test.sh.
#
#   scripts/wasmer.sh deps            Debian packages for LLVM 22 (scripts/prerequisites.sh wasmer)
#   scripts/wasmer.sh build           wasm-executor (wasmer, LLVM) + wasm-precompile-wasmer
#   scripts/wasmer.sh build-headless  wasm-executor without a compiler (artifacts only)
#   scripts/wasmer.sh test            both builds: lints, unit tests, conformance suite, wasmer tests
#
# Every build lands in target/release/wasm-executor (one target directory for all runtimes);
# each is kept as target/release/wasm-executor-wasmer[-headless]. The executor, the precompiler
# and eval's wasmer-metering are built in one cargo invocation so they share one feature
# resolution, hence one compiled wasmer and LLVM (a separate build of either would compile
# LLVM's bindings again, minutes on 2 cores).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export LLVM_SYS_221_PREFIX="${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}"
CARGO="${CARGO:-cargo}"
OUT="${CARGO_TARGET_DIR:-target}/release"
FULL=(-p wasm-executor -p wasm-precompile-wasmer -p wasmer-profile -p wasmer-metering --no-default-features --features wasm-executor/wasmer)
HEADLESS=(-p wasm-executor --no-default-features --features wasmer-headless)

# shellcheck source=scripts/common.sh
source scripts/common.sh

deps() {
    # llvm-22 comes from Debian 12's security suite.
    scripts/prerequisites.sh wasmer
}

build() {
    deps
    step "wasmer: wasm-executor (LLVM) and wasm-precompile-wasmer"
    "$CARGO" build --release --locked "${FULL[@]}"
    cp "$OUT/wasm-executor" "$OUT/wasm-executor-wasmer"
}

build_headless() {
    step "wasmer: headless wasm-executor"
    "$CARGO" build --release --locked "${HEADLESS[@]}"
    cp "$OUT/wasm-executor" "$OUT/wasm-executor-wasmer-headless"
}

test_all() {
    # The tests also use the default build's front end and wasmtime precompiler (a wasmtime
    # artifact must be refused); a no-op when `make build` already ran.
    step "wasmer: the default build's precompilers (for artifact tests)"
    "$CARGO" build --release --locked
    build
    step "wasmer: lints"
    "$CARGO" clippy --release --locked --all-targets "${FULL[@]}" -- -D warnings
    step "wasmer: unit tests, conformance suite, wasmer tests"
    "$CARGO" test --release --locked "${FULL[@]}"
    cp "$OUT/wasm-executor" "$OUT/wasm-executor-wasmer"
    step "wasmer headless: lints and tests"
    "$CARGO" clippy --release --locked --all-targets "${HEADLESS[@]}" -- -D warnings
    "$CARGO" test --release --locked "${HEADLESS[@]}" --test wasmer
    cp "$OUT/wasm-executor" "$OUT/wasm-executor-wasmer-headless"
}

case "${1:-}" in
deps) deps ;;
build) build ;;
build-headless) build_headless ;;
test) test_all ;;
*)
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac

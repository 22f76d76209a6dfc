#!/usr/bin/env bash
# The WAMR build: installs what it needs, builds, tests. Used by the Makefile (build-wamr,
# precompiler-wamr, test-wamr) and by scripts/test.sh.
#
#   scripts/wamr.sh deps          Debian packages: cmake, libclang-dev, libsimde-dev, llvm-19-dev
#                                 (scripts/prerequisites.sh wamr)
#   scripts/wamr.sh build         wasm-executor (WAMR) + wasm-precompile-wamr
#   scripts/wamr.sh precompiler   wasm-precompile-wamr only
#   scripts/wamr.sh test          lints, unit tests, conformance suite, WAMR tests
#
# The executor lands in target/release/wasm-executor (one target directory for all runtimes)
# and is kept as target/release/wasm-executor-wamr. WAMR's sources come from the pinned
# wamrx-sys package cargo unpacks (README, "The WAMR build"); nothing is downloaded besides
# crates and Debian packages.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO="${CARGO:-cargo}"
OUT="${CARGO_TARGET_DIR:-target}/release"
EXECUTOR=(-p wasm-executor --no-default-features --features wasm-executor/wamr)
PRECOMPILER=(-p wasm-precompile-wamr)
OTHERS=(-p wamr-profile -p wamr-source -p wamr-runtime-sys -p wamr-compiler-sys)

# shellcheck source=scripts/common.sh
source scripts/common.sh

deps() {
    scripts/prerequisites.sh wamr
}

build() {
    deps
    step "wamr: wasm-executor (fast interpreter + AOT loader) and wasm-precompile-wamr (LLVM 19)"
    "$CARGO" build --release --locked "${EXECUTOR[@]}" "${PRECOMPILER[@]}"
    cp "$OUT/wasm-executor" "$OUT/wasm-executor-wamr"
}

precompiler() {
    deps
    step "wamr: wasm-precompile-wamr"
    "$CARGO" build --release --locked "${PRECOMPILER[@]}"
}

test_all() {
    # The tests use the default build's front end (wasm-precompile); a no-op after `make build`.
    step "wamr: the default build's precompiler front end (for artifact tests)"
    "$CARGO" build --release --locked
    build
    step "wamr: lints"
    "$CARGO" clippy --release --locked --all-targets "${EXECUTOR[@]}" "${PRECOMPILER[@]}" "${OTHERS[@]}" -- -D warnings
    step "wamr: unit tests, conformance suite, WAMR tests"
    "$CARGO" test --release --locked "${EXECUTOR[@]}" "${PRECOMPILER[@]}" -p wamr-profile
    cp "$OUT/wasm-executor" "$OUT/wasm-executor-wamr"
}

case "${1:-}" in
deps) deps ;;
build) build ;;
precompiler) precompiler ;;
test) test_all ;;
*)
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac

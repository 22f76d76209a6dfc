#!/usr/bin/env bash
# The WAMR build: installs what it needs, builds, tests. Used by the Makefile (build-wamr,
# precompiler-wamr, test-wamr) and by scripts/test.sh.
#
#   scripts/wamr.sh deps          Debian packages: cmake, libclang-dev, libsimde-dev, llvm-19-dev
#                                 (scripts/prerequisites.sh wamr)
#   scripts/wamr.sh build         wasm-executor-wamr + wasm-precompile-wamr
#   scripts/wamr.sh precompiler   wasm-precompile-wamr only
#   scripts/wamr.sh test          lints, unit tests, conformance suite, WAMR tests
#
# The binaries land in target/release (one target directory for all runtimes). WAMR's sources come from the pinned
# wamrx-sys package cargo unpacks (docs/backends.md, "The WAMR build"); nothing is downloaded besides
# crates and Debian packages.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO="${CARGO:-cargo}"
OUT="${CARGO_TARGET_DIR:-target}/release"
EXECUTOR=(-p wasm-executor-wamr)
PRECOMPILER=(-p wasm-precompile-wamr)
OTHERS=(-p wamr-profile -p wamr-source -p wamr-runtime-sys -p wamr-compiler-sys)

# shellcheck source=scripts/common.sh
source scripts/common.sh

deps() {
    scripts/prerequisites.sh wamr
}

build() {
    deps
    step "wamr: wasm-executor-wamr (fast interpreter + AOT loader) and wasm-precompile-wamr (LLVM 19)"
    "$CARGO" build --release --locked "${EXECUTOR[@]}" "${PRECOMPILER[@]}"
}

precompiler() {
    deps
    step "wamr: wasm-precompile-wamr"
    "$CARGO" build --release --locked "${PRECOMPILER[@]}"
}

test_all() {
    # The tests use the default build's front end (wasm-precompile); a no-op after `make build`.
    step "wamr: the default build's precompiler front end (for artifact tests)"
    host_cargo build
    build
    step "wamr: lints"
    lints --all-targets "${EXECUTOR[@]}" "${PRECOMPILER[@]}" "${OTHERS[@]}"
    step "wamr: unit tests, WAMR tests"
    "$CARGO" test --release --locked "${EXECUTOR[@]}" "${PRECOMPILER[@]}" -p wamr-profile
    scripts/suite.sh run "$OUT/wasm-executor-wamr"
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

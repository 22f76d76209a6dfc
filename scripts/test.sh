#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: installs what is missing (Debian packages
# for the guest toolchain via actions/build.sh), builds the executor, precompiler and example
# actions once, checks formatting and lints, runs the conformance suite and unit tests, the
# OpenWhisk patch's tests against the real executor, the wasmer and WAMR backends, the Docker
# baseline's proxy, and the benchmark and evaluation harnesses in quick mode (the evaluation
# starts its own Docker engine and runs the JMeter plans).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh
started=$SECONDS

step "guest actions (wasm32-wasip1)"
actions/build.sh

step "executor and precompiler (release, one target directory)"
cargo build --release --locked
# Other backends' builds overwrite target/release/wasm-executor: keep this one by name.
cp target/release/wasm-executor target/release/wasm-executor-wasmtime

step "format and lints"
cargo fmt --all -- --check
cargo clippy --release --all-targets --locked -- -D warnings

step "unit tests and the conformance suite (wasmtime backend)"
cargo test --release --locked

if [[ -x openwhisk-patch/test.sh ]]; then
    step "OpenWhisk patch: executor client against the real executor"
    WASM_EXECUTOR_BIN="$PWD/target/release/wasm-executor-wasmtime" openwhisk-patch/test.sh
fi

if [[ -x eval/first-measurements.sh ]]; then
    step "benchmark harness (quick mode, so it cannot rot)"
    eval/first-measurements.sh --quick
fi

step "wasmer backend (LLVM and headless builds): lints, unit tests, conformance suite, wasmer tests"
wasmer_started=$SECONDS
scripts/wasmer.sh test
step "wasmer part took $((SECONDS - wasmer_started)) s"

step "WAMR backend (interpreter + AOT): lints, unit tests, conformance suite, WAMR tests"
wamr_started=$SECONDS
scripts/wamr.sh test
step "WAMR part took $((SECONDS - wamr_started)) s"

step "Docker baseline: the action proxy's tests"
(cd eval/baseline/proxy && go test ./...)

step "evaluation harness (quick mode): every backend against the Docker baseline, JMeter plans"
eval_started=$SECONDS
eval/evaluate.sh --quick
step "evaluation part took $((SECONDS - eval_started)) s"

step "all tests passed in $((SECONDS - started)) s"

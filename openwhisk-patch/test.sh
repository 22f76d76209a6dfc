#!/usr/bin/env bash
# Runs the CI tests of the OpenWhisk patch: the executor-client's unit tests and its tests
# against the real wasm-executor binary and Wasm actions.
#   WASM_EXECUTOR_BIN  executor binary (default <repo>/target/release/wasm-executor-wasmtime, then target/debug)
#   WASM_ACTIONS_DIR   built actions   (default <repo>/actions/dist)
# Needs a JDK (11+) and Maven; Maven fetches the dependencies from Maven Central.
set -euo pipefail
cd "$(dirname "$0")/executor-client"
command -v mvn >/dev/null || { echo "test.sh: Maven (mvn) is not installed" >&2; exit 1; }
exec mvn -B -q test "$@"

#!/usr/bin/env bash
# The conformance suite is compiled once, in the wasmtime package, and run against every
# runtime's executor (its harness reads the runtime from the binary's name):
#
#   scripts/suite.sh path                    builds the suite when stale, prints its test binary
#   scripts/suite.sh run EXECUTOR [ARGS...]  runs it against EXECUTOR (a wasm-executor-<runtime>
#                                            next to that runtime's precompiler), ARGS to the
#                                            test harness (--skip NAME, --test-threads N, …)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh

# Built as the host build (host_cargo): selecting the wasmtime package alone would resolve other
# features (the precompiler's all-arch wasmtime) and compile wasmtime once more.
suite_path() {
    host_cargo test --test conformance --no-run \
        --message-format=json | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "conformance" and m.get("executable"):
        print(m["executable"])'
}

case "${1:-}" in
path) suite_path ;;
run)
    [[ $# -ge 2 ]] || die "run needs the EXECUTOR under test"
    executor="$(realpath "$2")"
    shift 2
    suite="$(suite_path)"
    [[ -x "$suite" ]] || die "no conformance test binary was built"
    step "the conformance suite against $executor"
    # From the executor package's directory, as cargo test runs it.
    (cd executor/wasmtime && WASM_EXECUTOR_BIN="$executor" "$suite" "$@")
    ;;
*)
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac

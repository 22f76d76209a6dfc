#!/usr/bin/env bash
# The first measurements of the executor: /init latency (precompiled, portable cached, portable
# compile), warm no-op /run overhead, fresh-instance cost, throughput at rising concurrency.
#
#   eval/first-measurements.sh [--quick] [WASM-BENCH-FIRST-OPTIONS...]
#
# Builds what it needs (`cargo build --release`: executor, precompiler and wasm-bench; the
# example actions with actions/build.sh when actions/dist lacks big.wasm or echo.wasm), then
# runs `wasm-bench first`, which starts its own executors on free loopback ports.
#   full (about 2-3 minutes): records and summaries in eval/results/first/
#   --quick (under 30 s, tiny sizes, for CI): in target/eval-quick/ (results are not kept)
# The executor is $WASM_EXECUTOR_BIN, else the wasmtime build kept as
# <target>/release/wasm-executor-wasmtime (other backends' builds overwrite
# <target>/release/wasm-executor); <target> is $CARGO_TARGET_DIR or target. wasm-bench checks
# that the executor runs the runtime given with --runtime (default wasmtime).
# Options after --quick go to `wasm-bench first` (see `wasm-bench first --help`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
if [[ "${1:-}" == "--quick" ]]; then
    quick=1
    shift
fi
case "${1:-}" in
-h | --help)
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

log() { echo "first-measurements: $*" >&2; }
started=$SECONDS

if [[ ! -f actions/dist/big.wasm || ! -f actions/dist/echo.wasm ]]; then
    log "building the example actions (actions/build.sh)"
    actions/build.sh big echo
fi

bin="${CARGO_TARGET_DIR:-target}/release"
log "cargo build --release"
cargo build --release --locked
executor="${WASM_EXECUTOR_BIN:-}"
if [[ -z "$executor" ]]; then
    executor="$bin/wasm-executor-wasmtime"
    # The default build is wasmtime: keep it under that name (as scripts/test.sh does).
    cp "$bin/wasm-executor" "$executor"
fi

args=(first --executor "$executor")
if [[ $quick -eq 1 ]]; then
    args+=(--quick)
    [[ " $* " == *" --out "* ]] || args+=(--out target/eval-quick)
fi

log "running wasm-bench ${args[*]} $*"
"$bin/wasm-bench" "${args[@]}" --precompiler "$bin/wasm-precompile" "$@"
log "done in $((SECONDS - started)) s"

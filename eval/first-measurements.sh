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
# The executor is $WASM_EXECUTOR_BIN, else the first wasmtime build among
# target/release/wasm-executor and target/release/wasm-executor-wasmtime (other backends'
# builds overwrite target/release/wasm-executor; scripts/test.sh keeps a wasmtime copy).
# Options after --quick go to `wasm-bench first` (see `target/release/wasm-bench first --help`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
if [[ "${1:-}" == "--quick" ]]; then
    quick=1
    shift
fi
case "${1:-}" in
-h | --help)
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

log() { echo "first-measurements: $*" >&2; }
started=$SECONDS

if [[ ! -f actions/dist/big.wasm || ! -f actions/dist/echo.wasm ]]; then
    log "building the example actions (actions/build.sh)"
    actions/build.sh big echo
fi

log "cargo build --release"
cargo build --release

# The runtime an executor binary was built with, from its start-up log line.
runtime_of() {
    local bin="$1" scratch pid rt="" _
    [[ -x "$bin" ]] || return 0
    scratch="$(mktemp -d)"
    NO_COLOR=1 RUST_LOG=info "$bin" --listen 127.0.0.1:0 --cache-dir "$scratch/cache" \
        >/dev/null 2>"$scratch/log" &
    pid=$!
    for _ in $(seq 200); do
        grep -q 'listening' "$scratch/log" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    rt="$(sed -n 's/.*listening.* runtime="\{0,1\}\([a-z]*\).*/\1/p' "$scratch/log" | head -n 1)"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$scratch"
    echo "$rt"
}

executor="${WASM_EXECUTOR_BIN:-}"
if [[ -z "$executor" ]]; then
    for candidate in target/release/wasm-executor target/release/wasm-executor-wasmtime; do
        if [[ "$(runtime_of "$candidate")" == wasmtime ]]; then
            executor="$candidate"
            break
        fi
    done
    [[ -n "$executor" ]] || {
        log "error: no wasmtime build of the executor in target/release (another backend's build"
        log "overwrote target/release/wasm-executor): rebuild it, or set WASM_EXECUTOR_BIN"
        exit 1
    }
fi

args=(first --executor "$executor")
if [[ $quick -eq 1 ]]; then
    args+=(--quick)
    [[ " $* " == *" --out "* ]] || args+=(--out target/eval-quick)
fi

log "running wasm-bench ${args[*]} $*"
target/release/wasm-bench "${args[@]}" "$@"
log "done in $((SECONDS - started)) s"

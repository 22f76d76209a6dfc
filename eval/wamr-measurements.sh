#!/usr/bin/env bash
# The WAMR measurements, beside the first (wasmtime) ones; all through wasm-bench:
#   1. `first --runtime wamr` against the WAMR build (via eval/first-measurements.sh, whose
#      executor is WASM_EXECUTOR_BIN): /init of an AOT artifact and of portable Wasm (loaded for
#      the fast interpreter), warm /run overhead (portable echo), fresh-instance cost, throughput;
#   2. `footprint` for wasmtime and WAMR: idle RSS, RSS per warm container, /init and warm /run
#      latency, precompiled (AOT) and portable (WAMR: interpreted) side by side;
#   3. `hash`: CPU-bound throughput of `hash` in wasmtime and WAMR, precompiled and portable,
#      against the native binary, interleaved in one run.
#
#   eval/wamr-measurements.sh [--quick]
#
# Builds what it needs: the default build (wasmtime executor, precompilers, wasm-bench), the
# WAMR build (scripts/wamr.sh), the actions and the native `hash`.
#   full (about 5 minutes): eval/results/wamr-first/, eval/results/wamr-footprint/,
#   eval/results/wamr-hash/; what they say is in eval/WAMR.md
#   --quick (about a minute, tiny sizes, for CI): target/eval-quick-wamr/ (not kept)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
log() { echo "wamr-measurements: $*" >&2; }
started=$SECONDS

[[ -f actions/dist/hash.wasm && -f actions/dist/big.wasm && -f actions/dist/echo.wasm ]] ||
    actions/build.sh hash big echo
[[ -x actions/dist/native/hash ]] || actions/build.sh --native hash

bin="${CARGO_TARGET_DIR:-target}/release"
log "default build (wasmtime executor, precompilers, wasm-bench)"
cargo build --release --locked
cp "$bin/wasm-executor" "$bin/wasm-executor-wasmtime"
scripts/wamr.sh build

executors=(--executor "wasmtime=$bin/wasm-executor-wasmtime" --executor "wamr=$bin/wasm-executor-wamr"
    --precompiler "$bin/wasm-precompile")
if [[ $quick -eq 1 ]]; then
    out=target/eval-quick-wamr
    first=(--quick --runtime wamr --out "$out/first")
    footprint=(footprint "${executors[@]}" --quick --out "$out/footprint")
    hash=(hash "${executors[@]}" --quick --out "$out/hash")
else
    first=(--runtime wamr --out eval/results/wamr-first)
    footprint=(footprint "${executors[@]}" --out eval/results/wamr-footprint)
    hash=(hash "${executors[@]}" --out eval/results/wamr-hash)
fi
log "first measurements of the WAMR build"
WASM_EXECUTOR_BIN="$bin/wasm-executor-wamr" eval/first-measurements.sh "${first[@]}"
log "wasm-bench ${footprint[*]}"
"$bin/wasm-bench" "${footprint[@]}"
log "wasm-bench ${hash[*]}"
"$bin/wasm-bench" "${hash[@]}"
log "done in $((SECONDS - started)) s"

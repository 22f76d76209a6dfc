#!/usr/bin/env bash
# The wasmer measurements, beside the first (wasmtime) ones:
#   1. `wasm-bench first --runtime wasmer` against the LLVM build: /init from a precompiled
#      artifact, from the cache and from portable Wasm (LLVM at /init), warm /run overhead,
#      fresh-instance cost, throughput;
#   2. `wasm-bench hash`: CPU-bound throughput of `hash` in wasmer and wasmtime (precompiled
#      and portable) against the native binary, interleaved in one run;
#   3. `wasmer-metering`: what wasmer's metering middleware (the time-limit mechanism not
#      taken) costs on `hash` and on the `prime` sieve, three times each.
#
#   eval/wasmer-measurements.sh [--quick]
#
# Builds what it needs: the default build (wasmtime executor, precompilers, wasm-bench), the
# wasmer build (scripts/wasmer.sh), the actions and the native `hash`.
#   full (about 5 minutes): eval/results/wasmer-first/, eval/results/hash/,
#   eval/results/wasmer-metering.txt
#   --quick (about a minute, tiny sizes, for CI): target/eval-quick-wasmer/ (not kept)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
log() { echo "wasmer-measurements: $*" >&2; }
started=$SECONDS

[[ -f actions/dist/hash.wasm && -f actions/dist/big.wasm && -f actions/dist/echo.wasm ]] ||
    actions/build.sh hash big echo
[[ -f actions/dist/prime.wasm ]] || actions/build.sh prime
[[ -x actions/dist/native/hash ]] || actions/build.sh --native hash

bin="${CARGO_TARGET_DIR:-target}/release"
log "default build (wasmtime executor, precompilers, wasm-bench)"
cargo build --release --locked
cp "$bin/wasm-executor" "$bin/wasm-executor-wasmtime"
scripts/wasmer.sh build

first=(first --runtime wasmer --executor "$bin/wasm-executor-wasmer" --precompiler "$bin/wasm-precompile")
hash=(hash --executor "wasmtime=$bin/wasm-executor-wasmtime"
    --executor "wasmer=$bin/wasm-executor-wasmer" --precompiler "$bin/wasm-precompile")
if [[ $quick -eq 1 ]]; then
    first+=(--quick --out target/eval-quick-wasmer/first)
    hash+=(--quick --out target/eval-quick-wasmer/hash)
else
    first+=(--out eval/results/wasmer-first)
    hash+=(--out eval/results/hash)
fi
log "wasm-bench ${first[*]}"
"$bin/wasm-bench" "${first[@]}"
log "wasm-bench ${hash[*]}"
"$bin/wasm-bench" "${hash[@]}"
metering=(actions/dist/hash.wasm '{"iterations":1200000}' 15)
sieve=(actions/dist/prime.wasm '{"limit":30000000}' 15)
repeats=3
metering_out=eval/results/wasmer-metering.txt
if [[ $quick -eq 1 ]]; then
    metering=(actions/dist/hash.wasm '{"iterations":1000}' 1)
    sieve=(actions/dist/prime.wasm '{"limit":1000}' 1)
    repeats=1
    metering_out=target/eval-quick-wasmer/metering.txt
fi
log "wasmer-metering (hash and prime, $repeats times each)"
{
    echo "# wasmer-metering, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for _ in $(seq "$repeats"); do
        "$bin/wasmer-metering" "${metering[@]}"
        "$bin/wasmer-metering" "${sieve[@]}"
    done
} | tee "$metering_out"
log "done in $((SECONDS - started)) s"

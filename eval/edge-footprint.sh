#!/usr/bin/env bash
# The edge footprint: what the executor costs a small board.
#   1. binary size of every build, stripped, for x86_64 (this machine) and for the ARM targets
#      scripts/cross.sh built (target/cross/<triple>/);
#   2. `wasm-bench footprint` on this machine, natively: idle RSS and RSS per warm container of
#      the wasmtime, wasmer and WAMR builds, precompiled and portable (100 containers of `echo`).
# Memory is measured on x86_64 only: under qemu-user the emulator's translated code would count
# as the executor's. What a 1 GB board leaves for containers is worked out in eval/RESULTS.md
# from these figures.
#
#   eval/edge-footprint.sh [--quick]
#
# Needs the x86_64 builds (make build, make build-wasmer, make build-wamr) and, for their rows,
# make build-aarch64 / build-armv7. Writes eval/results/edge-footprint/ (--quick: target/
# eval-quick-edge/, tiny sizes, not kept).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh

quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
bin="${CARGO_TARGET_DIR:-target}/release"
cross="${CARGO_TARGET_DIR:-target}/cross"
out=eval/results/edge-footprint
[[ $quick -eq 1 ]] && out=target/eval-quick-edge
mkdir -p "$out"

[[ -f actions/dist/echo.wasm ]] || actions/build.sh echo
for build in wasmtime wasmer wamr; do
    [[ -x "$bin/wasm-executor-$build" ]] || die "$bin/wasm-executor-$build is missing: make build-$build"
done

step "binary sizes (stripped)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
{
    echo "| target | build | stripped size |"
    echo "|---|---|---:|"
    for build in wasmtime wasmer wasmer-headless wamr; do
        [[ -x "$bin/wasm-executor-$build" ]] || continue
        strip -o "$scratch/exe" "$bin/wasm-executor-$build"
        printf '| x86_64-unknown-linux-gnu | %s | %.1f MB |\n' "$build" "$(($(stat -c %s "$scratch/exe") / 1000))e-3"
    done
    for dir in "$cross"/*/; do
        [[ -d "$dir" ]] || continue
        for exe in "$dir"wasm-executor-*; do
            [[ -x "$exe" ]] || continue
            printf '| %s | %s | %.1f MB |\n' "$(basename "$dir")" "${exe##*/wasm-executor-}" "$(($(stat -c %s "$exe") / 1000))e-3"
        done
    done
} | tee "$out/binaries.md"

step "memory: idle and per warm container, x86_64"
footprint=(footprint --executor "wasmtime=$bin/wasm-executor-wasmtime" --executor "wasmer=$bin/wasm-executor-wasmer"
    --executor "wamr=$bin/wasm-executor-wamr" --precompiler "$bin/wasm-precompile" --out "$out")
[[ $quick -eq 1 ]] && footprint+=(--quick)
"$bin/wasm-bench" "${footprint[@]}"
cat "$out/summary.md"

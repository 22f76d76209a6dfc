#!/usr/bin/env bash
# The soak run: builds the executor for RUNTIME (wasmtime, wasmer or wamr) and the guests,
# then mixes benign and hostile activations against it for SECONDS (default 600) after a 30 s
# warm-up (`wasm-bench soak`, eval/wasm-bench/src/soak.rs). Fails if the executor's RSS or open
# descriptors in the last minute lie more than 10 % above those of the minute at the run's middle
# (growth in the second half: a leak), or a benign request fails with anything but 503. Samples and a summary go to eval/results/soak/RUNTIME/.
#
#   scripts/soak.sh [RUNTIME] [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/common.sh
source scripts/common.sh
runtime="${1:-wasmtime}"
seconds="${2:-600}"
bin="${CARGO_TARGET_DIR:-target}/release"

case "$runtime" in
wasmtime)
    cargo build --release --locked
    executor="$bin/wasm-executor-wasmtime"
    ;;
wasmer)
    scripts/wasmer.sh build
    executor="$bin/wasm-executor-wasmer"
    ;;
wamr)
    scripts/wamr.sh build
    executor="$bin/wasm-executor-wamr"
    ;;
*) die "unknown runtime '$runtime' (wasmtime, wasmer, wamr)" ;;
esac
cargo build --release --locked -p wasm-bench
step "soak: $runtime for $seconds s"
RUST_LOG="${RUST_LOG:-info}" "$bin/wasm-bench" soak --executor "$executor" --seconds "$seconds" \
    --out "eval/results/soak/$runtime"

#!/usr/bin/env bash
# Where an executor build's CPU goes per warm activation: `perf record` of the machine (call
# graphs unwound with DWARF) while `wasm-bench evaluate` runs the platform-cost experiment (one
# client, a new connection per activation, then one kept alive) and one level of the I/O-bound
# experiment; then the executor process's samples (every thread) go to `breakdown.py`, which
# cuts each measured stretch out of them (by CLOCK_MONOTONIC, which the records carry), sorts
# every sample into one part of the warm path and writes OUT/breakdown.json. perf.data is not
# kept (hundreds of MB).
#
#   eval/profile/profile.sh [--runtime wasmtime|wasmer|wamr] [--activations N] [--io-clients N]
#                           [--out DIR]
#
# Needs root (or perf_event_paranoid ≤ 1) and Debian's linux-perf, installed when missing.
# PROFILE_KEEP=1 keeps perf.data and the script text (their directory is printed).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/common.sh

runtime=wasmtime
io_clients=256
out=eval/results/profile
activations=20000
while [[ $# -gt 0 ]]; do
    case "$1" in
    --runtime) runtime="$2"; shift 2 ;;
    --io-clients) io_clients="$2"; shift 2 ;;
    --activations) activations="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done

command -v perf >/dev/null 2>&1 || ensure_packages linux-perf
bench=target/release/wasm-bench
executor=target/release/wasm-executor-$runtime
for binary in "$bench" "$executor" target/release/wasm-precompile; do
    [[ -x $binary ]] || die "$binary is missing: build it first (make build, or scripts/build.sh $runtime)"
done
[[ -f actions/dist/hash.wasm && -f actions/dist/net.wasm ]] || die "actions/dist is missing: run actions/build.sh"

scratch=$(mktemp -d)
trap 'kill "$bench_pid" 2>/dev/null || true; [[ -n ${PROFILE_KEEP:-} ]] || rm -rf "$scratch"' EXIT
mkdir -p "$out"

step "wasm-bench evaluate on $runtime (cost, $activations activations per connection; io at $io_clients clients)"
"$bench" evaluate --platforms "$runtime" --experiments cost,io \
    --"executor-$runtime" "$executor" --cost-activations "$activations" \
    --io-levels "$io_clients" --repetitions 1 --level-secs 10 \
    --out "$out" >"$scratch/bench.log" 2>&1 &
bench_pid=$!

# The executor is the benchmark's child. perf records the whole machine (following one
# process misses threads it starts later, such as a pool's), and only the executor's samples
# are sorted.
pid=
for _ in $(seq 600); do
    pid=$(pgrep -P "$bench_pid" -f "wasm-executor-$runtime" | head -n 1 || true)
    [[ -n $pid ]] && break
    kill -0 "$bench_pid" 2>/dev/null || break
    sleep 0.05
done
[[ -n $pid ]] || { cat "$scratch/bench.log" >&2; die "the executor did not start"; }
perf record --quiet -a -F 1999 --call-graph dwarf,16384 -k CLOCK_MONOTONIC \
    -o "$scratch/perf.data" 2>"$scratch/perf.log" &
perf_pid=$!
wait "$bench_pid" || { cat "$scratch/bench.log" >&2; die "wasm-bench failed"; }
kill -INT "$perf_pid"
wait "$perf_pid" || true

[[ -n ${PROFILE_KEEP:-} ]] && echo "perf data and script kept in $scratch"
step "sorting the samples (perf script, a few minutes)"
# Frames by symbol, without the functions inlined into them: resolving those runs addr2line
# over each binary's debug information, which takes hours for a build with LLVM in it.
perf script -i "$scratch/perf.data" --pid "$pid" --no-inline -F pid,tid,comm,time,ip,sym,dso \
    >"$scratch/script.txt" 2>/dev/null
python3 eval/profile/breakdown.py "$out/summary.json" "$scratch/script.txt" \
    --perf-version "$(perf --version), perf script --no-inline" --frequency 1999 >"$out/breakdown.json"
python3 eval/profile/breakdown.py --show "$out/breakdown.json"

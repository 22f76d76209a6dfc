#!/usr/bin/env bash
# Reproduces the evaluation (eval/RESULTS.md) on this machine with one command: builds what is
# missing, starts our own Docker engine for the baseline, runs every experiment on every
# executor build and on the Docker baseline and the native binary, compares `hash` precompiled,
# portable and native on every build (and wasmer's metering), plots, and runs the JMeter plans
# against the executor and against the baseline.
#
#   eval/evaluate.sh                 # full mode: every backend, about 45-60 min of measuring
#   eval/evaluate.sh --quick         # tiny sizes, a few minutes: CI runs this so nothing rots
#   eval/evaluate.sh --backends wamr --no-jmeter   # one build against Docker and native
#
# Options:
#   --backends LIST     executor builds to evaluate (default: wasmtime,wasmer,wamr; the wasmer
#                       and WAMR builds are made with scripts/wasmer.sh and scripts/wamr.sh
#                       when missing)
#   --out DIR           results (default eval/results/evaluation; quick: target/eval-quick/evaluation)
#   --max-error-pct P   fail when more than P % of an experiment's activations on one platform,
#                       or of a JMeter plan's requests, failed (default 0: any failure fails)
#   --no-jmeter         leave out the JMeter plans
#   -- ARGS             passed on to `wasm-bench evaluate` (e.g. --experiments cold,cpu)
#
# Needs root (or passwordless sudo) the first time: scripts/prerequisites.sh installs Debian's
# docker.io for the baseline engine, Go, matplotlib, a JDK and Maven.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/common.sh
source scripts/common.sh

quick=0
backends=wasmtime,wasmer,wamr
out=""
max_error_pct=0
jmeter=1
extra=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --quick) quick=1 ;;
    --backends) backends="$2"; shift ;;
    --out) out="$2"; shift ;;
    --max-error-pct) max_error_pct="$2"; shift ;;
    --no-jmeter) jmeter=0 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "evaluate.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [[ -z "$out" ]]; then
    if [[ $quick == 1 ]]; then out=target/eval-quick/evaluation; else out=eval/results/evaluation; fi
fi
started=$SECONDS
bin="${CARGO_TARGET_DIR:-target}/release"
IFS=, read -r -a backend_list <<<"$backends"
groups=(guests eval java)
for b in "${backend_list[@]}"; do
    case "$b" in
    wasmtime) ;;
    wasmer | wamr) groups+=("$b") ;;
    *) echo "evaluate.sh: unknown backend $b" >&2; exit 2 ;;
    esac
done
step "prerequisites: ${groups[*]}"
scripts/prerequisites.sh "${groups[@]}"

step "actions: Wasm, native twins, and hash built three ways"
actions/build.sh
actions/build.sh --native add echo hash net
actions/build.sh --variants hash
actions/build.sh --native --variants hash

step "executor (wasmtime), precompiler, wasm-bench"
host_cargo build

for b in "${backend_list[@]}"; do
    # scripts/test.sh's host build (WASM_EXECUTOR_BUILD=all) holds every runtime already.
    if [[ $b != wasmtime && "${WASM_EXECUTOR_BUILD:-default}" != all ]]; then
        step "the $b executor and precompiler"
        "scripts/$b.sh" build
    fi
done

step "Docker engine for the baseline (our own, under target/dockerd)"
eval/baseline/dockerd.sh start
eval "$(eval/baseline/dockerd.sh env)"
trap 'eval/baseline/dockerd.sh stop >/dev/null 2>&1 || true' EXIT
eval/baseline/build-images.sh add echo hash net \
    hash.lto=actions/dist/variants/native/hash.lto \
    hash.release=actions/dist/variants/native/hash.release \
    hash.debug=actions/dist/variants/native/hash.debug

step "experiments on ${backends}, docker, native"
mode=()
[[ $quick == 1 ]] && mode=(--quick)
"$bin/wasm-bench" evaluate "${mode[@]}" --platforms "$backends,docker,native" --out "$out" \
    --executor-wasmtime "$bin/wasm-executor-wasmtime" --executor-wasmer "$bin/wasm-executor-wasmer" \
    --executor-wamr "$bin/wasm-executor-wamr" --precompiler "$bin/wasm-precompile" \
    --max-error-pct "$max_error_pct" "${extra[@]}"

step "hash precompiled, portable and native on ${backends} (wasm-bench hash)"
hash=(hash --precompiler "$bin/wasm-precompile" --out "$out/hash")
for b in "${backend_list[@]}"; do
    hash+=(--executor "$b=$bin/wasm-executor-$b")
done
[[ $quick == 1 ]] && hash+=(--quick)
"$bin/wasm-bench" "${hash[@]}"

if [[ " ${backend_list[*]} " == *" wasmer "* ]]; then
    step "wasmer's metering: hash and prime with and without instruction metering (wasmer-metering)"
    metering=(actions/dist/hash.wasm '{"iterations":1200000}' 15)
    sieve=(actions/dist/prime.wasm '{"limit":30000000}' 15)
    repeats=3
    if [[ $quick == 1 ]]; then
        metering=(actions/dist/hash.wasm '{"iterations":1000}' 1)
        sieve=(actions/dist/prime.wasm '{"limit":1000}' 1)
        repeats=1
    fi
    {
        echo "# wasmer-metering, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
        for _ in $(seq "$repeats"); do
            "$bin/wasmer-metering" "${metering[@]}"
            "$bin/wasmer-metering" "${sieve[@]}"
        done
    } | tee "$out/wasmer-metering.txt"
fi

step "plots"
# Debian's Python, where python3-matplotlib lives (scripts/prerequisites.sh eval).
/usr/bin/python3 eval/plot.py "$out"

# run_jmeter PLATFORM PLAN USER_MEMORY_MB: a gateway on PLATFORM with an OpenWhisk-like pool of
# that much user memory, the JMeter plan through Maven against it, the gateway stopped again.
run_jmeter() {
    local platform=$1 plan=$2 memory=$3 port gateway status=0 log
    port=$((18080 + RANDOM % 1000))
    log="$out/jmeter/gateway-$platform-$plan.log"
    "$bin/wasm-bench" gateway --platform "$platform" --listen "127.0.0.1:$port" \
        --executor "$bin/wasm-executor-$platform" --precompiler "$bin/wasm-precompile" \
        --user-memory-mb "$memory" >"$log" 2>&1 &
    gateway=$!
    for _ in $(seq 1 600); do
        curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
        kill -0 "$gateway" 2>/dev/null || { cat "$log" >&2; return 1; }
        sleep 0.1
    done
    eval/jmeter/run.sh --port "$port" --plan "$plan" "${jmeter_mode[@]}" \
        --max-error-pct "$max_error_pct" --out "$out/jmeter/$platform" -- "${jmeter_props[@]}" || status=$?
    kill -TERM "$gateway"
    wait "$gateway" || true
    return "$status"
}

if [[ $jmeter == 1 ]]; then
    step "JMeter plans against the executor (wasmtime) and the Docker baseline"
    mkdir -p "$out/jmeter"
    jmeter_mode=()
    # Full mode: the plans' sizes scaled to this 2-core machine (see eval/jmeter/README.md).
    jmeter_props=(-Jclients=8 -Jrounds=4 -Jmax_threads=8 -Jramp_interval=2 -Jhold=20
        -Jthreads=8 -Jduration=60 -Jthink_ms=200)
    if [[ $quick == 1 ]]; then
        jmeter_mode=(--quick)
        jmeter_props=()
    fi
    for platform in wasmtime docker; do
        # Cold starts and the realistic mix with OpenWhisk's default pool (1024 MB, 256 MB
        # containers); the mixed plan with room for every client's two containers.
        run_jmeter "$platform" cold-start 1024
        run_jmeter "$platform" mixed 8192
        run_jmeter "$platform" realistic 1024
    done
fi

step "evaluation done in $((SECONDS - started)) s: $out/summary.md, plots in $out/plots"

#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian 12 machine (what CI runs): installs and
# checks every prerequisite first (scripts/prerequisites.sh), builds the guests, then every
# runtime's executor, precompiler and tools once (one cargo build, linted as it compiles), checks
# formatting, runs the guests' unit tests and the reproducibility of their build, the unit tests,
# the backend tests and the conformance suite over HTTP on every backend (wasmtime, wasmer with
# LLVM and headless, WAMR), the fuzz targets for a bounded time, the OpenWhisk patch's tests
# against the real executor, the executor's OCI image (the suite against the container), the
# aarch64 builds (every executor and the precompilers) with part of the suite against the wasmtime
# and WAMR executors under qemu-user (`make test-cross`: every ARM executor, the whole suite), the deployment files'
# checks (Raspberry Pi, Kubernetes), the Docker baseline's proxy tests, the edge footprint's
# script, the evaluation in quick mode (its own Docker engine, every backend against the
# baseline, the build comparisons, the JMeter plans) and, last, the release archives
# (`make dist`), each unpacked and used as a user would.
# Nothing is skipped: a missing tool stops the run in its first minute. Every step prints how
# long it took; CONTRIBUTING.md lists them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh
started=$SECONDS
bin="${CARGO_TARGET_DIR:-target}/release"

# timed NAME COMMAND...: runs the command under a step heading and reports how long it took,
# and how long the whole run has taken (what a run stopped at CI's limit leaves to read).
timed() {
    local name="$1" began=$SECONDS
    shift
    step "$name"
    "$@"
    step "$name: $((SECONDS - began)) s (the run so far: $((SECONDS - started)) s)"
}

timed "prerequisites: every package and tool, checked up front" scripts/prerequisites.sh all

# The aarch64 builds (the wasmtime, headless wasmer and WAMR executors and the precompilers of
# the release's aarch64 archive; `make test-cross` also builds armv7 WAMR) need only Debian's
# compiler and a target directory of their own, so they run in the background at the lowest CPU priority from
# here on: they take what the host steps leave idle (test runs, fuzzing, the image and Maven
# steps, the evaluation's measurements) without slowing them, and are waited for at the end,
# before their suites run under qemu-user. With the kernel's autogroup scheduling (Debian's
# default) `nice` ranks processes only within their session, and a session of its own (setsid,
# so that the whole build can be stopped) would get an equal share of the CPU: the session's
# autogroup gets nice 19 as well.
cross_log="${CARGO_TARGET_DIR:-target}/cross/build.log"
mkdir -p "$(dirname "$cross_log")"
step "ARM builds started in the background at nice 19 (log: $cross_log)"
setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null || true
    exec nice -n 19 scripts/cross.sh build aarch64' >"$cross_log" 2>&1 &
cross_build=$!
trap 'kill -TERM -- "-$cross_build" 2>/dev/null || true' EXIT

# wait_for_cross_build: the background ARM builds' end, their log's tail on failure.
wait_for_cross_build() {
    if ! wait "$cross_build"; then
        tail -n 60 "$cross_log" >&2
        die "the ARM builds failed (the whole log: $cross_log)"
    fi
    grep -E '^(==>|-rwx)' "$cross_log" || true
}

# guest_checks: the guests' build, its reproducibility, and the SDK's and actions' host checks.
guest_checks() {
    actions/build.sh
    step "the guest build is reproducible (the same bytes from another path)"
    actions/build.sh --reproduce
    step "guest SDK and actions: format, lints, unit tests (host)"
    (cd actions && cargo fmt --all -- --check)
    (cd actions && cargo clippy --locked --all-targets -- -D warnings)
    (cd actions && cargo test --locked)
}
timed "guest actions (wasm32-wasip1): build, reproducibility, host checks" guest_checks

# The host build, made once for every step below and the scripts they run (which see the same
# environment, so none of them compiles anything again):
# - every runtime's packages in one cargo feature resolution (WASM_EXECUTOR_BUILD=all, see
#   host_cargo in scripts/common.sh): each dependency is compiled once for all executors;
# - linted as it compiles: clippy's driver compiles the workspace's own crates (what
#   `cargo clippy -- -D warnings` runs, without its second, checking compilation of every
#   dependency), and any lint fails the build. Guests and the ARM builds use the plain compiler.
export WASM_EXECUTOR_BUILD=all
export RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

timed "host build: every runtime's executor, precompiler, tools and tests, linted (one cargo build)" \
    host_cargo build --all-targets
timed "format" cargo fmt --all -- --check
timed "the engines' native code for WAMR, x86_64 and aarch64 (cached by what it is made of)" \
    scripts/engine-artifacts.sh x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu

# packing: the documented packing commands as actions/README.md, `make pack` and deploy/pi give
# them: portable zips, and artifacts precompiled for this machine and signed with a fresh key.
packing() {
    local scratch
    scratch="$(mktemp -d)"
    "$bin/wasm-precompile" keygen --out "$scratch/operator" >/dev/null
    actions/pack.sh --out "$scratch/portable" add echo
    WASM_PRECOMPILE="$bin/wasm-precompile" actions/pack.sh --precompile wasmtime \
        --sign-key "$scratch/operator.pem" --out "$scratch/precompiled" add echo
    for zip in "$scratch"/{portable,precompiled}/{add,echo}.zip; do
        [[ -s "$zip" ]] || die "actions/pack.sh made no $zip"
    done
    rm -rf "$scratch"
}
timed "the documented packing commands (actions/pack.sh, portable and precompiled)" packing
timed "the documentation's blocks: the runnable ones as written, the others marked with a reason" \
    scripts/doc-test.sh
step "eval/RESULTS.md and README.md's figures: generated from the committed records, unchanged"
python3 -m unittest discover --start-directory eval/report --pattern 'test_*.py' --top-level-directory eval
python3 eval/report --check
step "the command-line reference quotes each program's help as the program prints it"
scripts/cli-reference.sh --check

timed "unit tests, backend tests (wasmer, WAMR) and the conformance suite (wasmtime)" host_cargo test

timed "the conformance suite against the wasmer executor (LLVM)" \
    scripts/suite.sh run "$bin/wasm-executor-wasmer"
timed "the conformance suite against the WAMR executor (interpreter + AOT)" \
    scripts/suite.sh run "$bin/wasm-executor-wamr"
timed "the headless wasmer executor (no compiler): build, lints, wasmer tests" \
    scripts/wasmer.sh test-headless

timed "fuzz targets (30 s each, from the checked-in seed corpus)" scripts/fuzz.sh 30

timed "the executor's OCI image: hardening, the conformance suite against the container" deploy/image/test.sh

timed "OpenWhisk patch: executor client against the real executor" \
    env WASM_EXECUTOR_BIN="$(cd "$bin" && pwd)/wasm-executor-wasmtime" openwhisk-patch/test.sh

step "JMeter against real OpenWhisk: the committed summaries recomputed from their records; run.sh refuses a missing API"
ow_scratch="$(mktemp -d)"
for results in eval/results/openwhisk/run-* eval/results/openwhisk-*; do
    [[ -d "$results" ]] || continue
    rm -rf "$ow_scratch/copy"
    cp -r "$results/." "$ow_scratch/copy"
    rm "$ow_scratch/copy/summary.json" "$ow_scratch/copy/summary.md"
    python3 eval/openwhisk/owtool.py summarize --results "$ow_scratch/copy" >/dev/null
    cmp "$results/summary.md" "$ow_scratch/copy/summary.md"
done
if eval/openwhisk/run.sh --wasm-api http://127.0.0.1:9 --platforms wasm >"$ow_scratch/refused.log" 2>&1 ||
    ! grep -q "no OpenWhisk API at http://127.0.0.1:9" "$ow_scratch/refused.log"; then
    cat "$ow_scratch/refused.log" >&2
    echo "test.sh: eval/openwhisk/run.sh did not refuse an unreachable API" >&2
    exit 1
fi
rm -rf "$ow_scratch"

step "the edge footprint's script (quick mode, so it cannot rot)"
eval/edge-footprint.sh --quick

timed "deployment: the Raspberry Pi installer and units, the Kubernetes manifests and dashboard" \
    bash -c 'deploy/pi/verify.sh && deploy/kubernetes/verify.sh'

step "Docker baseline: the action proxy's vet and tests"
(cd eval/baseline/proxy && go vet ./... && go test ./...)

timed "evaluation (quick mode): every backend against the Docker baseline, JMeter plans" \
    eval/evaluate.sh --quick
timed "JavaScript and Python on the executor (quick mode): cold and warm, source and snapshot, memory" \
    python3 eval/engines.py --backends wasmtime --rounds 3 --containers 10 --out target/eval-quick/engines
timed "an I/O-bound JavaScript and Python action on the executor (quick mode)" \
    python3 eval/engines_io.py --backends wasmtime --concurrency 1,4 --seconds 1 --out target/eval-quick/engines-io

# Last, so that the background build has had every idle moment of the steps above.
timed "ARM builds (aarch64: every executor, the precompilers): the rest of the background build" \
    wait_for_cross_build
timed "ARM: part of the conformance suite against the aarch64 executors under qemu-user (make test-cross: all of it, every ARM executor)" \
    scripts/cross.sh test aarch64 wamr wasmtime
timed "release archives (make dist): made, then unpacked and used as a user would" scripts/dist.sh

step "all tests passed in $((SECONDS - started)) s"

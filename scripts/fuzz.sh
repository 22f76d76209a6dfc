#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time, starting from the checked-in seed
# corpus (fuzz/corpus/<target>, read only; what a run discovers goes to a scratch directory).
# A crash, a panic, a timeout or an out-of-memory stops the run with the failing input saved
# under fuzz/artifacts/<target>/ and printed as a reproduction command.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 30 s, every target)
#
# cargo-fuzz passes nightly-only flags to rustc; on a stable toolchain this script sets
# RUSTC_BOOTSTRAP=1 for its own builds (no nightly toolchain can be downloaded here). The
# sanitizer is "none": the fuzzed decoders are safe Rust, so what the fuzzer looks for is panics,
# failed assertions of the targets, hangs and unbounded allocation, which need no sanitizer.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/common.sh
source scripts/common.sh
scripts/prerequisites.sh fuzz

seconds="${1:-30}"
shift || true
export RUSTC_BOOTSTRAP=1
fuzz=(cargo fuzz)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || mapfile -t targets < <("${fuzz[@]}" list)

step "building the fuzz targets (${targets[*]})"
"${fuzz[@]}" build --sanitizer none

for target in "${targets[@]}"; do
    step "fuzzing $target for $seconds s"
    found="$(mktemp -d)"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: an input may not make the
    # decoder allocate more than 2 GiB; -max_len: bodies and archives up to 64 KiB.
    if ! "${fuzz[@]}" run --sanitizer none "$target" "$found" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 2>&1 | tail -n 40; then
        rm -rf "$found"
        die "fuzz target $target failed: see the input under fuzz/artifacts/$target/ (reproduce: RUSTC_BOOTSTRAP=1 cargo fuzz run -s none $target fuzz/artifacts/$target/<file>)"
    fi
    rm -rf "$found"
done

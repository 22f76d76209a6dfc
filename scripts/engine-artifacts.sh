#!/usr/bin/env bash
# The language engines' native code for the WAMR executor: `wasm-precompile-wamr --engine` of
# actions/dist/quickjs.wasm and python.wasm, written beside them as quickjs.wamr-ARCH.owart and
# python.wamr-ARCH.owart, where a WAMR executor given the engine finds it and runs the engine
# as AOT code instead of interpreting it (docs/backends.md, "Engines as AOT code").
#
#   scripts/engine-artifacts.sh [TARGET...]   (default: this machine's target triple)
#
# Needs the engines (actions/build.sh) and target/release/wasm-precompile-wamr (make
# precompiler-wamr). Compiling both engines takes about 2 minutes of CPU per target; the
# artifacts are kept in a cache outside the checkout (WASM_ENGINE_ARTIFACT_CACHE, default
# ~/.cache/wasm-executor/engine-artifacts) under a key of the engine's bytes, the target and
# every file the compile depends on (WAMR's build, the precompiler, the engine preparation,
# Cargo.lock), so another clone of the same sources takes them from there. Reads no standard
# input.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh

OUT="${CARGO_TARGET_DIR:-target}/release"
CACHE="${WASM_ENGINE_ARTIFACT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wasm-executor/engine-artifacts}"
ENGINES=(quickjs python)

compiler="$OUT/wasm-precompile-wamr"
[[ -x "$compiler" ]] || die "$compiler is missing: make precompiler-wamr"
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("$(rustc -vV | sed -n 's/^host: //p')")

# What the compile depends on besides the engine: the tracked files of these paths, as they are
# in the working tree.
sources_hash="$(git ls-files -z wamr precompilers/wamr precompilers/cli executor/engine-module artifact Cargo.lock |
    xargs -0 sha256sum | sha256sum | cut -c1-64)"

mkdir -p "$CACHE"
pids=()
for target in "${targets[@]}"; do
    arch="${target%%-*}"
    for engine in "${ENGINES[@]}"; do
        wasm="actions/dist/$engine.wasm"
        [[ -s "$wasm" ]] || die "$wasm is missing: actions/build.sh"
        out="actions/dist/$engine.wamr-$arch.owart"
        key="$(printf '%s %s %s\n' "$(sha256sum <"$wasm" | cut -c1-64)" "$target" "$sources_hash" |
            sha256sum | cut -c1-64)"
        cached="$CACHE/$key.owart"
        if [[ -s "$cached" ]]; then
            cp "$cached" "$out"
            echo "$out: from the cache ($cached)" >&2
            continue
        fi
        # Both engines at once: one per core.
        (
            "$compiler" --engine "$wasm" --target "$target" -o "$out.partial" >/dev/null
            mv "$out.partial" "$out"
            echo "$out: $(stat -c %s "$out") bytes of $target code for $wasm" >&2
            cp "$out" "$cached.partial.$$" && mv "$cached.partial.$$" "$cached"
        ) &
        pids+=($!)
    done
done
failed=0
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
[[ $failed -eq 0 ]] || die "an engine did not compile"

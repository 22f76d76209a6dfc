#!/usr/bin/env bash
# Packs built modules (actions/dist/<name>.wasm) as zips for
#   wsk action create NAME NAME.zip --kind wasm:0.1
#
#   actions/pack.sh [--out DIR] [NAME...]
#       portable: the module as is, in dist/zip/<name>.zip (zip entry <name>.wasm)
#   actions/pack.sh --precompile RUNTIME [--target TRIPLE] [--sign-key FILE] [--out DIR] [NAME...]
#       precompiled for RUNTIME by `wasm-precompile ... --zip`, in
#       dist/zip/<runtime>[-<triple>]/<name>.zip
#
# wasm-precompile is $WASM_PRECOMPILE, else target/release/wasm-precompile at the repository
# root (build it there with `make build`, or `make precompiler-wasmer` / `make precompiler-wamr`
# for those runtimes). Zips are written with
# python3's zipfile (no zip package needed), with a fixed timestamp so they are reproducible.
# A zip newer than its module (and the signing key) is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

usage() {
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
log() { echo "pack.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}

runtime=""
target=""
sign_key=""
out=""
names=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --precompile)
        runtime="${2:?--precompile needs a runtime name}"
        shift
        ;;
    --target)
        target="${2:?--target needs a target triple}"
        shift
        ;;
    --sign-key)
        sign_key="${2:?--sign-key needs a file}"
        shift
        ;;
    --out)
        out="${2:?--out needs a directory}"
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*)
        log "unknown option $1"
        usage >&2
        exit 2
        ;;
    *) names+=("$1") ;;
    esac
    shift
done
if [[ -z "$runtime" && (-n "$target" || -n "$sign_key") ]]; then
    die "--target and --sign-key only apply with --precompile"
fi
if [[ -n "$sign_key" ]]; then
    [[ -f "$sign_key" ]] || die "signing key $sign_key not found"
    sign_key="$(cd "$(dirname "$sign_key")" && pwd)/$(basename "$sign_key")"
fi

dist="$here/dist"
if [[ -z "$out" ]]; then
    out="$dist/zip"
    if [[ -n "$runtime" ]]; then
        out="$out/$runtime${target:+-$target}"
    fi
fi

modules=()
if [[ ${#names[@]} -gt 0 ]]; then
    for n in "${names[@]}"; do
        n="${n%.wasm}"
        [[ -f "$dist/$n.wasm" ]] || die "$dist/$n.wasm not found (run actions/build.sh first)"
        modules+=("$dist/$n.wasm")
    done
else
    for m in "$dist"/*.wasm; do
        [[ -f "$m" ]] && modules+=("$m")
    done
    [[ ${#modules[@]} -gt 0 ]] || die "no modules in $dist (run actions/build.sh first)"
fi

precompile=()
if [[ -n "$runtime" ]]; then
    bin="${WASM_PRECOMPILE:-$repo/target/release/wasm-precompile}"
    [[ -x "$bin" ]] || die "wasm-precompile not found at $bin (set WASM_PRECOMPILE or run \
'make precompiler-$runtime' in $repo)"
    # `wasm-precompile compile --runtime R -- INPUT [flags]`: the flags after the input are the
    # runtime compiler's own.
    precompile=("$bin" compile --runtime "$runtime" --)
    compiler_flags=(--zip)
    [[ -n "$target" ]] && compiler_flags+=(--target "$target")
    [[ -n "$sign_key" ]] && compiler_flags+=(--sign-key "$sign_key")
fi
mkdir -p "$out"

# zip_one IN.wasm OUT.zip: a deflated zip holding IN under its base name.
zip_one() {
    python3 - "$1" "$2" <<'PY'
import os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
info = zipfile.ZipInfo(os.path.basename(src), date_time=(1980, 1, 1, 0, 0, 0))
info.compress_type = zipfile.ZIP_DEFLATED
info.external_attr = 0o644 << 16
with open(src, "rb") as f:
    data = f.read()
with zipfile.ZipFile(dst, "w") as z:
    z.writestr(info, data, compresslevel=9)
PY
}

printf '%-12s %10s %10s\n' "action" "module" "zip"
for m in "${modules[@]}"; do
    name="$(basename "$m" .wasm)"
    zip="$out/$name.zip"
    tmp="$out/.$name.partial.zip"
    if [[ ! -f "$zip" || "$m" -nt "$zip" || (-n "$sign_key" && "$sign_key" -nt "$zip") ]]; then
        if [[ ${#precompile[@]} -gt 0 ]]; then
            "${precompile[@]}" "$m" "${compiler_flags[@]}" -o "$tmp" || die "wasm-precompile failed on $m"
        else
            zip_one "$m" "$tmp" || die "cannot zip $m"
        fi
        mv -f "$tmp" "$zip"
    fi
    printf '%-12s %10s %10s\n' "$name" "$(stat -c %s "$m")" "$(stat -c %s "$zip")"
done
log "zips in $out"

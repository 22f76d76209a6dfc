#!/usr/bin/env bash
# Builds every guest action (Rust and C) to actions/dist/<name>.wasm, or with --native the same
# sources as static host binaries to actions/dist/native/<name>.
#
#   actions/build.sh [--native] [--no-opt] [--variants] [NAME...]
#
# --variants builds the named Rust actions (default: all) in three cargo profiles, for comparing
# builds: dist/variants/<name>.{lto,release,debug}.wasm, with --native
# dist/variants/native/<name>.{lto,release,debug}. lto = profile release-lto (= release: fat
# LTO, one codegen unit), release = release-plain (no cross-crate LTO, 16 codegen units), debug
# = dev (unoptimised, debug info); see Cargo.toml. wasm-opt treats lto and release like a
# normal build (and --no-opt skips it); debug only gets `wasm-opt -O0 -g` (re-encoding, no
# optimisation, debug info kept). dist/*.wasm is left alone.
#
# Wasm route: if rustup has the wasm32-wasip1 target, plain `cargo build --target wasm32-wasip1`;
# otherwise Debian's rustc/cargo with -Zbuild-std (see README.md), installing the Debian
# packages it needs when they are missing and we are root. Modules go through `wasm-opt -O3`
# when binaryen is installed (--no-opt skips it). Guests build in actions/target, native
# binaries in actions/target/native. Idempotent: unchanged actions are not rebuilt or copied.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

mode=wasm
optimize=1
variants=0
only=()
usage() {
    sed -n '2,18p' "$here/build.sh" | sed 's/^# \{0,1\}//'
}
while [[ $# -gt 0 ]]; do
    case "$1" in
    --native) mode=native ;;
    --no-opt | --no-wasm-opt) optimize=0 ;;
    --variants) variants=1 ;;
    -h | --help)
        usage
        exit 0
        ;;
    -*)
        echo "build.sh: unknown option $1" >&2
        usage >&2
        exit 2
        ;;
    *) only+=("$1") ;;
    esac
    shift
done

log() { echo "build.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}

# --- which actions ---------------------------------------------------------------------------
rust_actions=()
for manifest in */Cargo.toml; do
    dir="${manifest%/Cargo.toml}"
    [[ -f "$dir/src/main.rs" ]] && rust_actions+=("$dir")
done
c_actions=()
for src in c/*.c; do
    [[ -e "$src" ]] || continue
    name="${src#c/}"
    c_actions+=("${name%.c}")
done
if [[ ${#only[@]} -gt 0 ]]; then
    want=" ${only[*]} "
    keep=()
    for a in "${rust_actions[@]}"; do [[ "$want" == *" $a "* ]] && keep+=("$a"); done
    rust_actions=("${keep[@]+"${keep[@]}"}")
    keep=()
    for a in "${c_actions[@]}"; do [[ "$want" == *" $a "* ]] && keep+=("$a"); done
    c_actions=("${keep[@]+"${keep[@]}"}")
    for a in "${only[@]}"; do
        [[ " ${rust_actions[*]-} ${c_actions[*]-} " == *" $a "* ]] || die "unknown action '$a'"
    done
fi
if [[ $variants -eq 1 ]]; then
    # Profiles are a cargo notion: variants are built for Rust actions only.
    if [[ ${#only[@]} -gt 0 && ${#c_actions[@]} -gt 0 ]]; then
        die "--variants builds Rust actions only, not ${c_actions[*]}"
    fi
    c_actions=()
    [[ ${#rust_actions[@]} -gt 0 ]] || die "--variants: no Rust action to build"
fi
# --variants: variant name and the cargo profile it is built with (see Cargo.toml).
variant_names=(lto release debug)
declare -A variant_profile=([lto]=release-lto [release]=release-plain [debug]=dev)

# --- helpers ---------------------------------------------------------------------------------
# Installs the Debian packages given that are not installed yet (fast when all are present).
ensure_debs() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    local sudo=()
    if [[ "$(id -u)" -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            die "missing Debian packages: ${missing[*]} (run: apt-get install -y ${missing[*]})"
        fi
    fi
    log "installing Debian packages: ${missing[*]}"
    if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; then
        "${sudo[@]}" apt-get update
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
    fi
}

# True when $2 is missing or older than $1 (which must exist).
is_stale() {
    [[ -f "$1" ]] || die "expected build output $1 is missing"
    [[ ! -f "$2" || "$1" -nt "$2" ]]
}

# Writes $2 from $1, through the command "$3"... (called as CMD SRC -o DST) when given.
produce() {
    local src="$1" dst="$2"
    shift 2
    mkdir -p "$(dirname "$dst")"
    if [[ $# -gt 0 ]]; then
        "$@" "$src" -o "$dst.tmp" || die "$1 failed on $src"
    else
        cp "$src" "$dst.tmp" || die "cannot copy $src"
    fi
    mv -f "$dst.tmp" "$dst"
    log "wrote $dst"
}

size_table() {
    local dir="$1" suffix="$2" f name
    printf '%-12s %10s\n' "action" "bytes"
    for f in "$dir"/*"$suffix"; do
        [[ -f "$f" ]] || continue
        name="$(basename "$f" "$suffix")"
        printf '%-12s %10s\n' "$name" "$(stat -c %s "$f")"
    done
}

cargo_package_args() {
    local a
    for a in "${rust_actions[@]}"; do printf -- '-p\n%s\n' "$a"; done
}

# cargo's option for a profile (plain --release for release, as the recipes in README.md read)
# and the directory under target/<triple>/ it builds into.
profile_args() {
    if [[ "$1" == release ]]; then echo --release; else printf -- '--profile\n%s\n' "$1"; fi
}
profile_dir() {
    case "$1" in
    dev) echo debug ;;
    *) echo "$1" ;;
    esac
}

# --- native ----------------------------------------------------------------------------------
if [[ "$mode" == native ]]; then
    out="dist/native"
    [[ $variants -eq 1 ]] && out="dist/variants/native"
    mkdir -p "$out"
    if [[ ${#rust_actions[@]} -gt 0 ]]; then
        command -v cargo >/dev/null 2>&1 || die "cargo not found (install Rust with rustup)"
        host="$(rustc -vV | sed -n 's/^host: //p')"
        [[ -n "$host" ]] || die "cannot tell the host target from rustc -vV"
        mapfile -t pkgs < <(cargo_package_args)
        # Builds the selected Rust actions with cargo profile $1 (static host binaries).
        build_native() {
            local profile_opts
            mapfile -t profile_opts < <(profile_args "$1")
            log "cargo build ${profile_opts[*]} --target $host (native, static)"
            # An explicit --target keeps +crt-static off build scripts and proc macros.
            CARGO_TARGET_DIR="$here/target/native" \
                RUSTFLAGS="-C target-feature=+crt-static" \
                cargo build "${profile_opts[@]}" --target "$host" "${pkgs[@]}"
        }
        if [[ $variants -eq 1 ]]; then
            for v in "${variant_names[@]}"; do
                profile="${variant_profile[$v]}"
                build_native "$profile"
                for a in "${rust_actions[@]}"; do
                    src="target/native/$host/$(profile_dir "$profile")/$a"
                    if is_stale "$src" "$out/$a.$v"; then produce "$src" "$out/$a.$v"; fi
                done
            done
        else
            build_native release
            for a in "${rust_actions[@]}"; do
                src="target/native/$host/release/$a"
                if is_stale "$src" "$out/$a"; then produce "$src" "$out/$a"; fi
            done
        fi
    fi
    for a in "${c_actions[@]+"${c_actions[@]}"}"; do
        if [[ ! -f "$out/$a" || "c/$a.c" -nt "$out/$a" ]]; then
            log "cc -static -O2 c/$a.c"
            cc -static -O2 -Wall -o "$out/$a.tmp" "c/$a.c"
            mv -f "$out/$a.tmp" "$out/$a"
        fi
    done
    size_table "$out" ""
    exit 0
fi

# --- wasm ------------------------------------------------------------------------------------
target=wasm32-wasip1
mkdir -p dist target/c

# Builds the selected Rust actions for $target with cargo profile $1.
build_wasm() {
    local profile_opts
    mapfile -t profile_opts < <(profile_args "$1")
    if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        log "cargo build ${profile_opts[*]} --target $target (rustup)"
        cargo build "${profile_opts[@]}" --target "$target" "${pkgs[@]}"
    else
        # Debian's compiler builds the standard library for the target from rust-web-src (with
        # the same profile as the actions).
        ensure_debs rustc-web cargo-web rust-web-src wasi-libc lld-19
        log "cargo build ${profile_opts[*]} --target $target (Debian rustc, -Zbuild-std)"
        env -u RUSTUP_TOOLCHAIN -u CARGO -u RUSTDOC \
            RUSTC=/usr/bin/rustc \
            RUSTC_BOOTSTRAP=1 \
            CARGO_TARGET_WASM32_WASIP1_LINKER=/usr/lib/llvm-19/bin/wasm-ld \
            RUSTFLAGS="-C link-self-contained=no -L /usr/lib/wasm32-wasi -C link-arg=/usr/lib/wasm32-wasi/crt1-command.o" \
            /usr/bin/cargo build "${profile_opts[@]}" -Zbuild-std=std,panic_abort \
            --target "$target" "${pkgs[@]}"
    fi
}

if [[ ${#rust_actions[@]} -gt 0 ]]; then
    mapfile -t pkgs < <(cargo_package_args)
    if [[ $variants -eq 1 ]]; then
        for v in "${variant_names[@]}"; do build_wasm "${variant_profile[$v]}"; done
    else
        build_wasm release
    fi
fi

if [[ ${#c_actions[@]} -gt 0 ]]; then
    ensure_debs clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32
    for a in "${c_actions[@]}"; do
        if [[ ! -f "target/c/$a.wasm" || "c/$a.c" -nt "target/c/$a.wasm" ]]; then
            log "clang-19 --target=wasm32-wasi c/$a.c"
            clang-19 --target=wasm32-wasi --sysroot=/usr -O2 -Wall -Wl,--strip-all \
                -o "target/c/$a.wasm" "c/$a.c"
        fi
    done
fi

# wasm-opt -O3 when available. The feature flags match what rustc/clang emit for
# wasm32-wasip1 (Binaryen cannot read them from a stripped module).
opt=()
if [[ $optimize -eq 1 ]]; then
    if command -v wasm-opt >/dev/null 2>&1; then
        opt=(wasm-opt -O3 --enable-bulk-memory --enable-sign-ext --enable-mutable-globals
            --enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types)
    else
        log "wasm-opt not found (apt-get install binaryen): modules are not post-optimised"
    fi
fi
# A module is reprocessed when its source is newer or the post-processing choice changed
# (recorded per output in target/postprocess/<name>, for variants in
# target/postprocess/variants/<name>.<variant>).
mkdir -p target/postprocess/variants
# postprocess NAME SRC DST [COMMAND...]: DST from SRC, through COMMAND when given.
postprocess() {
    local name="$1" src="$2" dst="$3"
    shift 3
    local stamp="target/postprocess/$name" want="${*:-copy}"
    if is_stale "$src" "$dst" || [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
        produce "$src" "$dst" "$@"
        echo "$want" >"$stamp"
    fi
}
if [[ $variants -eq 1 ]]; then
    for v in "${variant_names[@]}"; do
        post=("${opt[@]+"${opt[@]}"}")
        # Debug is not optimised: wasm-opt -O0 -g only rewrites the encoding (LLVM's padded
        # call_indirect table index reads as reference types to WAMR) and keeps debug info.
        if [[ "$v" == debug && ${#opt[@]} -gt 0 ]]; then
            post=(wasm-opt -O0 -g "${opt[@]:2}")
        fi
        dir="$(profile_dir "${variant_profile[$v]}")"
        for a in "${rust_actions[@]}"; do
            postprocess "variants/$a.$v" "target/$target/$dir/$a.wasm" \
                "dist/variants/$a.$v.wasm" "${post[@]+"${post[@]}"}"
        done
    done
    size_table dist/variants .wasm
    exit 0
fi
for a in "${rust_actions[@]+"${rust_actions[@]}"}"; do
    postprocess "$a" "target/$target/release/$a.wasm" "dist/$a.wasm" "${opt[@]+"${opt[@]}"}"
done
for a in "${c_actions[@]+"${c_actions[@]}"}"; do
    postprocess "$a" "target/c/$a.wasm" "dist/$a.wasm" "${opt[@]+"${opt[@]}"}"
done
size_table dist .wasm

#!/usr/bin/env bash
# Builds every guest action (Rust and C) to actions/dist/<name>.wasm, or with --native the same
# sources as static host binaries to actions/dist/native/<name>.
#
#   actions/build.sh [--native] [--no-opt] [NAME...]
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
only=()
usage() {
    sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
while [[ $# -gt 0 ]]; do
    case "$1" in
    --native) mode=native ;;
    --no-opt | --no-wasm-opt) optimize=0 ;;
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

# --- native ----------------------------------------------------------------------------------
if [[ "$mode" == native ]]; then
    out="dist/native"
    mkdir -p "$out"
    if [[ ${#rust_actions[@]} -gt 0 ]]; then
        command -v cargo >/dev/null 2>&1 || die "cargo not found (install Rust with rustup)"
        host="$(rustc -vV | sed -n 's/^host: //p')"
        [[ -n "$host" ]] || die "cannot tell the host target from rustc -vV"
        mapfile -t pkgs < <(cargo_package_args)
        log "cargo build --release --target $host (native, static)"
        # An explicit --target keeps +crt-static off build scripts and proc macros.
        CARGO_TARGET_DIR="$here/target/native" \
            RUSTFLAGS="-C target-feature=+crt-static" \
            cargo build --release --target "$host" "${pkgs[@]}"
        for a in "${rust_actions[@]}"; do
            src="target/native/$host/release/$a"
            if is_stale "$src" "$out/$a"; then produce "$src" "$out/$a"; fi
        done
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

if [[ ${#rust_actions[@]} -gt 0 ]]; then
    mapfile -t pkgs < <(cargo_package_args)
    if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        log "cargo build --release --target $target (rustup)"
        cargo build --release --target "$target" "${pkgs[@]}"
    else
        # Debian's compiler builds the standard library for the target from rust-web-src.
        ensure_debs rustc-web cargo-web rust-web-src wasi-libc lld-19
        log "cargo build --release --target $target (Debian rustc, -Zbuild-std)"
        env -u RUSTUP_TOOLCHAIN -u CARGO -u RUSTDOC \
            RUSTC=/usr/bin/rustc \
            RUSTC_BOOTSTRAP=1 \
            CARGO_TARGET_WASM32_WASIP1_LINKER=/usr/lib/llvm-19/bin/wasm-ld \
            RUSTFLAGS="-C link-self-contained=no -L /usr/lib/wasm32-wasi -C link-arg=/usr/lib/wasm32-wasi/crt1-command.o" \
            /usr/bin/cargo build --release -Zbuild-std=std,panic_abort \
            --target "$target" "${pkgs[@]}"
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
# (recorded per module in target/postprocess/<name>).
want_stamp="${opt[*]-copy}"
mkdir -p target/postprocess
postprocess() {
    local name="$1" src="$2" stamp="target/postprocess/$1"
    if is_stale "$src" "dist/$name.wasm" || [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want_stamp" ]]; then
        produce "$src" "dist/$name.wasm" "${opt[@]}"
        echo "$want_stamp" >"$stamp"
    fi
}
for a in "${rust_actions[@]+"${rust_actions[@]}"}"; do
    postprocess "$a" "target/$target/release/$a.wasm"
done
for a in "${c_actions[@]+"${c_actions[@]}"}"; do
    postprocess "$a" "target/c/$a.wasm"
done
size_table dist .wasm

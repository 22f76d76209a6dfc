#!/usr/bin/env bash
# Installs and checks everything the project's commands need on Debian 12, in one go, so that a
# missing tool is reported in the first minute instead of halfway through a long run. Every
# script calls it for the groups it needs (instant when everything is there); `make test` calls
# it for all of them first.
#
#   scripts/prerequisites.sh [GROUP...]      (default: all)
#
#   guests  building the example actions for wasm32-wasip1: Debian's rustc-web, cargo-web and
#           rust-web-src (the wasm32 standard library is built from source; not needed when
#           rustup has the wasm32-wasip1 target), wasi-libc, lld-19, clang-19 and its wasm32
#           runtime library, llvm-19 (llvm-ar for the JavaScript engine's C sources), curl and
#           python3 (3.11: the Python engine's download and its frozen standard library)
#   wasmer  the wasmer build: LLVM 22 (llvm-22-dev, libpolly-22-dev and what they link)
#   wamr    the WAMR build: cmake, libclang-dev (bindgen), libsimde-dev, llvm-19-dev, and
#           qemu-user-static (its tests run the executor on an emulated older CPU)
#   eval    the evaluation: docker.io (a private engine), curl, Debian's python3-matplotlib for
#           the plots (run with /usr/bin/python3); checks Go >= 1.21 for the baseline's proxy
#           (Debian 12's golang-go is 1.19, too old: install Go from https://go.dev/dl/)
#   java    a JDK >= 17 and Maven: the OpenWhisk patch's tests and the JMeter plans
#   cross   the ARM builds and their emulated tests (scripts/cross.sh): Debian's rustc-web,
#           cargo-web and rust-web-src (the target's standard library is built from source), the
#           aarch64 and armhf cross compilers and C libraries, qemu-user-static
#   fuzz    the fuzz targets (fuzz/): a C++ compiler for libFuzzer and cargo-fuzz (installed
#           with `cargo install --locked` from crates.io, pinned below)
#   all     every group
#
# Always: e2fsprogs (mkfs.ext4, for the namespaces' quota filesystems).
# Always checked: rustup's cargo and rustc >= 1.95 (install Rust with rustup when missing).
# Packages are installed as root, or with passwordless sudo; otherwise the script stops and
# prints the apt-get command to run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/common.sh
source "$root/scripts/common.sh"

RUST_MIN=1.95
GO_MIN=1.21
JAVA_MIN=17
CARGO_FUZZ_VERSION=0.13.2

groups=("$@")
[[ ${#groups[@]} -gt 0 ]] || groups=(all)
want() {
    local g
    for g in "${groups[@]}"; do [[ "$g" == "$1" || "$g" == all ]] && return 0; done
    return 1
}
for g in "${groups[@]}"; do
    case "$g" in
    guests | wasmer | wamr | eval | java | cross | fuzz | all) ;;
    -h | --help)
        sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown group '$g' (guests, wasmer, wamr, eval, java, fuzz, all)" ;;
    esac
done

# --- Rust (rustup): the host toolchain every build uses -----------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust $RUST_MIN or newer with rustup (https://rustup.rs)"
rust_version="$(rustc --version | awk '{print $2}')"
version_at_least "$rust_version" "$RUST_MIN" ||
    die "rustc $rust_version is too old: this workspace needs Rust $RUST_MIN or newer (rustup update)"

packages=()
if want guests; then
    # The Rust guests: rustup's own wasm32-wasip1 target when installed, else Debian's compiler
    # builds the standard library for the target (actions/build.sh picks the same way).
    if ! { command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip1; }; then
        packages+=(rustc-web cargo-web rust-web-src)
    fi
    packages+=(wasi-libc lld-19 clang-19 libclang-rt-19-dev-wasm32 llvm-19 curl python3)
fi
if want wasmer; then
    # libzstd-dev, libz3-dev, libxml2-dev, libffi-dev and zlib1g-dev are what LLVM's static
    # libraries link against and llvm-22-dev does not pull in.
    packages+=(llvm-22-dev libpolly-22-dev libzstd-dev libz3-dev libxml2-dev libffi-dev zlib1g-dev)
fi
if want wamr; then
    # cmake builds WAMR; bindgen needs libclang; the fast interpreter's SIMD uses SIMDe (WAMR's
    # cmake would download it); the AOT compiler builds against LLVM 19, the guests' clang.
    # qemu-user-static emulates a CPU without the build machine's optional features.
    packages+=(cmake libclang-dev libsimde-dev llvm-19-dev qemu-user-static)
fi
if want eval; then
    packages+=(curl python3-matplotlib)
    { command -v dockerd && command -v docker; } >/dev/null 2>&1 || packages+=(docker.io)
fi
if want java; then
    java_ok=0
    if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
        java_version="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
        version_at_least "${java_version:-0}" "$JAVA_MIN" && java_ok=1
    fi
    [[ $java_ok == 1 ]] || packages+=(openjdk-17-jdk-headless)
    command -v mvn >/dev/null 2>&1 || packages+=(maven)
fi

if want cross; then
    packages+=(rustc-web cargo-web rust-web-src qemu-user-static
        gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
        gcc-arm-linux-gnueabihf g++-arm-linux-gnueabihf libc6-dev-armhf-cross)
fi
if want fuzz; then
    packages+=(g++)
fi

# Always: mkfs.ext4, with which the executor makes each namespace's quota filesystem.
packages+=(e2fsprogs)

[[ ${#packages[@]} -eq 0 ]] || ensure_packages "${packages[@]}"

if want fuzz && [[ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
    step "installing cargo-fuzz $CARGO_FUZZ_VERSION (cargo install --locked)"
    cargo install --quiet --locked --version "$CARGO_FUZZ_VERSION" cargo-fuzz
fi

# --- what the packages cannot vouch for ---------------------------------------------------------
if want eval; then
    command -v go >/dev/null 2>&1 ||
        die "go not found: the baseline's proxy needs Go $GO_MIN or newer (https://go.dev/dl/; Debian 12's golang-go is 1.19, too old)"
    go_version="$(go env GOVERSION 2>/dev/null | sed 's/^go//')"
    version_at_least "${go_version:-0}" "$GO_MIN" ||
        die "go ${go_version:-?} is too old: the baseline's proxy needs Go $GO_MIN or newer (https://go.dev/dl/)"
    /usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
        die "/usr/bin/python3 cannot import matplotlib (Debian's python3-matplotlib)"
fi
exit 0

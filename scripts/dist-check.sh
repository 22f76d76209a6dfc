#!/usr/bin/env bash
# Checks release archives (scripts/dist.sh calls it) as their users get them: each archive
# is unpacked into an empty directory and its programs run from there, with nothing of this
# repository on their path. Inputs made here (the add action, the kit's new action) are built
# by the repository's recipes; what is checked is only what the archives hold.
#
#   scripts/dist-check.sh DIR VERSION PART...
#
#   source   the tree at the version: Cargo.toml's version, the Makefile, the patch
#   x86_64   every executor and precompiler prints the version; wasm-precompile (with the
#            compilers beside it) signs `add` for each runtime; each executor, with the
#            archive's engines, answers /init and /run of that artifact, of a JavaScript
#            action (wasmtime, WAMR) and of a Python action (wasmtime)
#   aarch64  the same binaries under qemu-user: versions, a precompile made with the ARM
#            wasm-precompile, the ARM executors running artifacts made for aarch64
#   kit      new.sh starts a Rust action outside any workspace, which builds against the
#            kit's SDK natively and for wasm32-wasip1 and answers through the executor
#   image    each saved image loads, has its platform, and the amd64 one prints the version
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=scripts/common.sh
source scripts/common.sh

[[ $# -ge 3 ]] || {
    sed -n '2,/^set -euo/{s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
    exit 2
}
dist="$(cd "$1" && pwd)"
version="$2"
shift 2
parts=("$@")
wants() { [[ " ${parts[*]} " == *" $1 "* ]]; }

work="$(mktemp -d)"
executor_pids=()
cleanup() {
    local pid
    for pid in "${executor_pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# unpacked ARCHIVE: unpacks it into an empty directory and prints its top directory.
unpacked() {
    local into
    into="$(mktemp -d "$work/unpacked.XXXX")"
    tar -C "$into" -xzf "$1"
    echo "$into/$(ls "$into")"
}

# --- executors, reached over Unix sockets (no ports to collide) ---------------------------------

# start_executor NAME COMMAND...: starts an executor listening on $work/NAME.sock with a state
# directory of its own and waits until it answers.
start_executor() {
    local name="$1"
    shift
    "$@" --listen "unix:$work/$name.sock" --state-dir "$work/$name.state" \
        >"$work/$name.log" 2>&1 &
    executor_pids+=($!)
    for _ in $(seq 1 600); do
        curl -sf --unix-socket "$work/$name.sock" http://localhost/health >/dev/null 2>&1 && return 0
        kill -0 "$!" 2>/dev/null || break
        sleep 0.1
    done
    cat "$work/$name.log" >&2
    die "the executor $name did not start"
}

# call NAME PATH BODY: POSTs BODY (a file with @, or JSON text) and prints the answer.
call() {
    curl -s --unix-socket "$work/$1.sock" "http://localhost$2" \
        -H 'Content-Type: application/json' --data-binary "$3"
}

# expect NAME ID INIT-FILE PARAMS RESULT: /init of INIT-FILE then /run with PARAMS must answer
# with RESULT (a part of the answer, e.g. one field).
expect() {
    local name="$1" id="$2" init="$3" params="$4" want="$5" got
    got="$(call "$name" "/$id/init" "@$init")"
    [[ "$got" == '{"ok":true}' ]] || die "$name: /init of $id answered $got"
    got="$(call "$name" "/$id/run" "{\"value\": $params}")"
    [[ "$got" == *"$want"* ]] || die "$name: /run of $id answered $got, without $want"
    step "dist check: $name ran $id: $got"
}

# init_binary FILE OUT: the /init body of a binary action.
init_binary() {
    printf '{"value": {"binary": true, "code": "%s"}}' "$(base64 -w0 "$1")" >"$2"
}

# init_source KIND FILE OUT: the /init body of an action sent as source text.
init_source() {
    python3 -c 'import json, sys; print(json.dumps({"value": {"kind": sys.argv[1], "binary": False, "code": open(sys.argv[2]).read()}}))' \
        "$1" "$2" >"$3"
}

# check_versions LAUNCHER DIR: every binary of DIR/bin prints the version.
check_versions() {
    local launcher=("$1") dir="$2" binary said
    [[ -n "$1" ]] || launcher=()
    for binary in "$dir"/bin/*; do
        said="$("${launcher[@]}" "$binary" --version 2>&1)" || die "$(basename "$binary") --version failed: $said"
        [[ "$said" == *" $version"* ]] || die "$(basename "$binary") --version says '$said', not $version"
    done
}

ADD_PARAMS='{"param1": 2, "param2": 3}'
ADD_RESULT='{"result":5}'
JS_PARAMS='{"name": "Ada", "lang": "de"}'
PY_PARAMS='{"name": "Ada"}'

if wants source; then
    step "dist check: the source archive"
    src="$(unpacked "$dist/wasm-executor-$version-src.tar.gz")"
    grep -q "^version = \"$version\"" "$src/Cargo.toml" || die "the source archive is not version $version"
    for file in Makefile README.md LICENSE NOTICE CHANGELOG.md openwhisk-patch/apply.sh actions/sdk/src/lib.rs; do
        [[ -f "$src/$file" ]] || die "the source archive lacks $file"
    done
fi

if wants x86_64; then
    step "dist check: the x86_64 archive"
    x86="$(unpacked "$dist/wasm-executor-$version-x86_64-unknown-linux-gnu.tar.gz")"
    check_versions "" "$x86"
    engines="$x86/share/wasm-executor/engines"
    "$x86/bin/wasm-precompile" keygen --out "$work/operator" >/dev/null
    init_source nodejs:20 actions/js/hello.js "$work/hello-js.json"
    init_source python:3 actions/py/hello.py "$work/hello-py.json"
    for runtime in wasmtime wasmer wamr; do
        "$x86/bin/wasm-precompile" compile --runtime "$runtime" -- actions/dist/add.wasm \
            --sign-key "$work/operator.pem" --zip -o "$work/add-$runtime.zip" >/dev/null
        init_binary "$work/add-$runtime.zip" "$work/add-$runtime.json"
    done
    for executor in wasmtime wasmer wasmer-headless wamr; do
        runtime="${executor%-headless}"
        # The engines on the JIT and the interpreter; wasmer would compile them with LLVM at
        # start (minutes for Python), and the headless build runs artifacts only.
        engine_flags=()
        [[ $executor == wasmer* ]] ||
            engine_flags=(--js-engine "$engines/quickjs.wasm" --python-engine "$engines/python.wasm")
        start_executor "x86-$executor" "$x86/bin/wasm-executor-$executor" \
            --trusted-key "$work/operator.pub" "${engine_flags[@]}"
        expect "x86-$executor" add "$work/add-$runtime.json" "$ADD_PARAMS" "$ADD_RESULT"
    done
    # JavaScript on the JIT and on the interpreter, Python once (its LLVM compile takes minutes).
    for executor in wasmtime wamr; do
        expect "x86-$executor" hello-js "$work/hello-js.json" "$JS_PARAMS" '"greeting":"Hallo, Ada!"'
    done
    expect x86-wasmtime hello-py "$work/hello-py.json" "$PY_PARAMS" '"Hello, Ada!"'
fi

if wants aarch64; then
    step "dist check: the aarch64 archive, under qemu-user"
    arm="$(unpacked "$dist/wasm-executor-$version-aarch64-unknown-linux-gnu.tar.gz")"
    export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
    check_versions qemu-aarch64-static "$arm"
    qemu-aarch64-static "$arm/bin/wasm-precompile" keygen --out "$work/arm-operator" >/dev/null
    # wasmtime's artifact made by the archive's own compiler (called directly: the front end
    # would start it as a child, which qemu-user without binfmt cannot); wasmer's and WAMR's
    # on x86_64.
    qemu-aarch64-static "$arm/bin/wasm-precompile-wasmtime" actions/dist/add.wasm \
        --sign-key "$work/arm-operator.pem" --zip -o "$work/arm-add-wasmtime.zip" >/dev/null
    target_dir="${CARGO_TARGET_DIR:-target}/release"
    for runtime in wasmer wamr; do
        "$target_dir/wasm-precompile" compile --runtime "$runtime" -- actions/dist/add.wasm \
            --target aarch64-unknown-linux-gnu --sign-key "$work/arm-operator.pem" --zip \
            -o "$work/arm-add-$runtime.zip" >/dev/null
    done
    for executor in wasmtime wasmer-headless wamr; do
        runtime="${executor%-headless}"
        init_binary "$work/arm-add-$runtime.zip" "$work/arm-add-$runtime.json"
        # qemu-user maps the whole address space the wasmtime pool reserves: keep it small.
        start_executor "arm-$executor" qemu-aarch64-static "$arm/bin/wasm-executor-$executor" \
            --trusted-key "$work/arm-operator.pub" --max-instances 8
        expect "arm-$executor" add "$work/arm-add-$runtime.json" "$ADD_PARAMS" "$ADD_RESULT"
    done
fi

if wants kit; then
    step "dist check: the action kit, outside any workspace"
    listing="$(tar -tzf "$dist/openwhisk-wasm-sdk-$version.crate")"
    grep -qx "openwhisk-wasm-sdk-$version/src/lib.rs" <<<"$listing" || die "the SDK crate has no src/lib.rs"
    kit="$(unpacked "$dist/wasm-action-kit-$version.tar.gz")"
    "$kit/new.sh" greeter "$work/greeter" >/dev/null
    grep -q "path = \"$kit/sdk\"" "$work/greeter/Cargo.toml" || die "new.sh did not use the kit's SDK"
    (cd "$work/greeter" && cargo build --release --quiet)
    said="$(echo '{"name": "kit"}' | "$work/greeter/target/release/greeter" 2>/dev/null)"
    [[ "$said" == '{"greeting":"Hello, kit!"}' ]] || die "the kit's action answered $said natively"
    actions/build.sh --crate "$work/greeter" >/dev/null
    if [[ -n "${x86-}" ]]; then
        "$x86/bin/wasm-precompile" compile --runtime wasmtime -- "$work/greeter/greeter.wasm" \
            --sign-key "$work/operator.pem" --zip -o "$work/greeter.zip" >/dev/null
        init_binary "$work/greeter.zip" "$work/greeter.json"
        expect x86-wasmtime greeter "$work/greeter.json" '{"name": "kit"}' '{"greeting":"Hello, kit!"}'
    fi
fi

if wants image; then
    step "dist check: the OCI images"
    for arch in amd64 arm64; do
        tag="wasm-executor:$version"
        [[ $arch == amd64 ]] || tag="$tag-$arch"
        docker image rm "$tag" >/dev/null
        docker load -q -i "$dist/wasm-executor-image-$version-$arch.tar" >/dev/null
        [[ "$(docker image inspect --format '{{.Architecture}}' "$tag")" == "$arch" ]] ||
            die "$tag is not an $arch image"
    done
    said="$(docker run --rm --read-only "wasm-executor:$version" --version)"
    [[ "$said" == *" $version" ]] || die "the image says '$said', not $version"
fi

step "dist check: every archive did what it promises"

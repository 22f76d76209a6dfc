# Shared by the project's scripts (sourced, not run): step headings, failing with a clear
# message, and the one way packages are installed (Debian's apt, with one sudo policy).

step() { printf '\n==> %s\n' "$*"; }

# die MESSAGE...: the message on stderr, prefixed with the script's name, and exit 1.
die() {
    printf '%s: error: %s\n' "$(basename "${BASH_SOURCE[-1]:-$0}")" "$*" >&2
    exit 1
}

# ensure_packages PKG...: installs the Debian packages dpkg does not know yet, in one apt-get
# call (instant when all are installed). As root directly; otherwise through `sudo -n` when
# sudo needs no password; otherwise it stops and prints the command to run. The package lists
# are refreshed once when the first attempt fails.
ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            die "missing Debian packages: ${missing[*]}; install them as root: apt-get install -y --no-install-recommends ${missing[*]}"
        fi
    fi
    step "installing ${missing[*]}"
    local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends install)
    if ! "${apt[@]}" "${missing[@]}" </dev/null; then
        "${sudo[@]}" apt-get -q update </dev/null
        "${apt[@]}" "${missing[@]}" </dev/null || die "apt-get could not install ${missing[*]}"
    fi
}

# version_at_least HAVE WANT: true when dotted version HAVE >= WANT.
version_at_least() {
    [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]
}

# wasmer's LLVM bindings (llvm-sys 221) find Debian's LLVM 22 here (scripts/prerequisites.sh wasmer).
export LLVM_SYS_221_PREFIX="${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}"

# host_cargo COMMAND ARGS...: `cargo COMMAND --release --locked` over the host build's packages.
# By default the workspace's default members (the wasmtime build). With WASM_EXECUTOR_BUILD=all
# (scripts/test.sh sets it) every runtime's executor, precompiler and tools in one feature
# resolution, so each dependency is compiled once for all of them; the headless wasmer stays out
# (its wasmer has no compiler) and so do the fuzz targets (cargo fuzz builds them with its flags).
host_cargo() {
    local command="$1" selection=()
    shift
    case "${WASM_EXECUTOR_BUILD:-default}" in
    default) ;;
    all)
        selection=(--workspace --exclude wasm-executor-wasmer-headless --exclude wasm-executor-fuzz
            --features wasm-executor-wasmer/llvm)
        ;;
    *) die "WASM_EXECUTOR_BUILD is default or all, not '$WASM_EXECUTOR_BUILD'" ;;
    esac
    cargo "$command" --release --locked "${selection[@]}" "$@"
}

# lints ARGS...: clippy with every warning an error over the cargo selection ARGS, unless the
# builds of this run lint as they compile (scripts/test.sh sets clippy's driver as cargo's
# workspace wrapper, and a second, checking pass would compile every dependency again).
lints() {
    [[ "${RUSTC_WORKSPACE_WRAPPER:-}" == *clippy-driver ]] && return 0
    cargo clippy --release --locked "$@" -- -D warnings
}

# use_docker_engine: points DOCKER_HOST (exported) at an engine that answers: the one it names
# already, else the project's private engine (eval/baseline/dockerd.sh), started when it is not
# running. Sets STARTED_ENGINE=1 when it started it (the caller stops it with
# eval/baseline/dockerd.sh stop), else 0. Run from the repository's root.
use_docker_engine() {
    STARTED_ENGINE=0
    if [[ -n "${DOCKER_HOST-}" ]] && docker info >/dev/null 2>&1; then
        echo "using the Docker engine at $DOCKER_HOST" >&2
    elif eval/baseline/dockerd.sh status >/dev/null 2>&1; then
        eval "$(eval/baseline/dockerd.sh env)"
        echo "using the private Docker engine at $DOCKER_HOST" >&2
    else
        eval "$(eval/baseline/dockerd.sh start)"
        STARTED_ENGINE=1
    fi
    export DOCKER_HOST
}

#!/usr/bin/env bash
# Runs the executor's image where an executor binary would run: the conformance suite's
# launcher (WASM_EXECUTOR_LAUNCHER=deploy/image/launch.sh), which starts
# `LAUNCHER EXECUTOR_BIN ARGS...` and stops it with SIGTERM.
#
#   deploy/image/launch.sh EXECUTOR_BIN [ARGS...]
#
# EXECUTOR_BIN is ignored (the image holds its own); ARGS go to the executor in a container of
# the image $WASM_EXECUTOR_IMAGE (default wasm-executor:wasmtime) run as hardened as in
# production: the image's non-root user, a read-only root filesystem, no capabilities, no new
# privileges. Host networking, so that the suite reaches it on the loopback port it chose and
# guests reach the suite's loopback servers. The host paths the arguments name are
# bind-mounted at the same paths: the directories of --state-dir, --cache-dir, --dir-root and
# of a `--listen unix:PATH` socket read-write (created when missing, and, when this runs as
# root, handed to the image's user: the executor insists on owning them), the files of
# --auth-token-file and --trusted-key read-only (handed to the image's user too: a token file is
# readable by its owner alone). Run as another user, the container runs as that user instead.
#
# Signals: SIGTERM or SIGINT stops the container (`docker stop`: SIGTERM to the executor,
# SIGKILL 10 s later), SIGUSR1, SIGUSR2 and SIGHUP are passed on to the executor (`docker
# kill`); docker-init (--init) is PID 1 in the container, so the executor meets signals as it
# would outside one. The launcher exits with the container's status. Containers are named
# wasm-executor-launch-<launcher pid>; one whose launcher is gone (killed with SIGKILL) is
# removed by the next launch.
#
# With WASM_EXECUTOR_PID_FILE set, the executor's host pid is written to that file once it runs
# (for a harness that reads /proc/<pid> of the executor rather than of its launcher).
# RUST_LOG, RUST_BACKTRACE, TOKIO_* and the executor's WASM_EXECUTOR_* variables are passed on.
set -euo pipefail

log() { echo "launch.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 125
}
[[ $# -ge 1 ]] || {
    sed -n '2,/^set -euo/{s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
    exit 2
}
shift # the executor binary: the image holds its own

image="${WASM_EXECUTOR_IMAGE:-wasm-executor:wasmtime}"
prefix=wasm-executor-launch-
name="$prefix$$"
label=org.owwasm.launcher

# --- leftovers of launchers that are gone -----------------------------------------------------
while read -r other; do
    pid="${other#"$prefix"}"
    if [[ "$other" == "$name" ]] ||
        ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'launch\.sh'; then
        docker rm --force "$other" >/dev/null 2>&1 || true
    fi
done < <(docker ps --all --filter "label=$label" --format '{{.Names}}')

# --- the image's user, who must own what the executor writes ----------------------------------
user="$(docker image inspect --format '{{.Config.User}}' "$image" 2>/dev/null)" ||
    die "no image $image here: build it with deploy/image/build.sh"
uid="${user%%:*}"
gid="${user#*:}"
[[ "$uid" =~ ^[0-9]+$ && "$gid" =~ ^[0-9]+$ ]] || die "$image runs as '$user', not as numeric uid:gid"
[[ "$uid" -ne 0 ]] || die "$image runs as root"
as_user=()
if [[ $(id -u) -ne 0 ]]; then
    # Nothing can be handed over: the container runs as the caller, who owns the paths.
    as_user=(--user "$(id -u):$(id -g)")
fi
own() { [[ ${#as_user[@]} -gt 0 ]] || chown "$uid:$gid" "$1"; }

# --- the host paths the arguments name --------------------------------------------------------
dirs=()
files=()
# PATH normalized (no "..", no trailing "/"); the container's working directory is not the
# caller's, so relative paths are refused.
abs() {
    [[ "$1" == /* ]] || die "$1: the launcher needs absolute paths"
    realpath -m -s -- "$1"
}
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    flag="${args[$i]}"
    value="${args[$((i + 1))]-}"
    if [[ "$flag" == --*=* ]]; then
        value="${flag#*=}"
        flag="${flag%%=*}"
    fi
    case "$flag" in
    --state-dir | --cache-dir | --dir-root) dirs+=("$(abs "$value")") ;;
    --auth-token-file | --trusted-key | --js-engine | --python-engine) files+=("$(abs "$value")") ;;
    --listen) [[ "$value" != unix:* ]] || dirs+=("$(dirname "$(abs "${value#unix:}")")") ;;
    esac
done

# A directory: created when missing (mode 0700, as the executor would), handed to the image's
# user. Never / or a top-level directory such as /tmp.
prepare_dir() {
    local dir="$1" missing=()
    [[ "$dir" == /*/* ]] || die "$dir: give a directory below a top-level one (an absolute path, not / or /tmp)"
    while [[ ! -e "$dir" ]]; do
        missing=("$dir" "${missing[@]}")
        dir="$(dirname "$dir")"
    done
    for dir in "${missing[@]}"; do
        mkdir -m 0700 "$dir"
        own "$dir"
    done
    [[ -d "$1" ]] || die "$1 is not a directory"
    own "$1"
}

mounts=()
if [[ ${#dirs[@]} -gt 0 ]]; then
    for dir in "${dirs[@]}"; do
        prepare_dir "$dir"
    done
    # One mount per directory not inside another one.
    while read -r dir; do
        covered=0
        for m in "${mounts[@]}"; do
            [[ "$dir" == "$m" || "$dir" == "$m"/* ]] && covered=1
        done
        [[ $covered -eq 1 ]] || mounts+=("$dir")
    done < <(printf '%s\n' "${dirs[@]}" | LC_ALL=C sort -u)
fi
mount_args=()
for dir in "${mounts[@]}"; do
    [[ "$dir" != *,* ]] || die "$dir: a comma cannot be mounted"
    mount_args+=(--mount "type=bind,source=$dir,target=$dir")
done
for file in "${files[@]}"; do
    # A missing file stays missing: the executor reports it.
    [[ -f "$file" ]] || continue
    [[ "$file" != *,* ]] || die "$file: a comma cannot be mounted"
    own "$file"
    covered=0
    for m in "${mounts[@]}"; do
        [[ "$file" == "$m"/* ]] && covered=1
    done
    [[ $covered -eq 1 ]] || mount_args+=(--mount "type=bind,source=$file,target=$file,readonly")
done

env_args=()
while read -r var; do
    case "$var" in
    # The suite's own variables and the launcher's.
    WASM_EXECUTOR_BIN | WASM_EXECUTOR_LAUNCHER | WASM_EXECUTOR_TARGET | WASM_EXECUTOR_ARTIFACTS_ONLY | \
        WASM_EXECUTOR_IMAGE | WASM_EXECUTOR_PID_FILE) ;;
    WASM_EXECUTOR_* | RUST_LOG | RUST_BACKTRACE | RUST_LIB_BACKTRACE | TOKIO_*) env_args+=(--env "$var") ;;
    esac
done < <(compgen -e)

# --- run, pass signals on, leave nothing behind -----------------------------------------------
docker run --rm --name "$name" --label "$label=$$" --pull never \
    --network host --read-only --cap-drop ALL --security-opt no-new-privileges --init \
    --sig-proxy=false "${as_user[@]}" "${env_args[@]}" "${mount_args[@]}" \
    "$image" "$@" &
child=$!

reporter=""
if [[ -n "${WASM_EXECUTOR_PID_FILE-}" ]]; then
    # The container's PID 1 is docker-init; the executor is its only child.
    (
        for _ in $(seq 400); do
            init="$(docker inspect --format '{{.State.Pid}}' "$name" 2>/dev/null || true)"
            if [[ "$init" =~ ^[1-9][0-9]*$ ]]; then
                read -r pid _ <"/proc/$init/task/$init/children" || true
                if [[ -n "${pid-}" ]]; then
                    echo "$pid" >"$WASM_EXECUTOR_PID_FILE.tmp"
                    mv "$WASM_EXECUTOR_PID_FILE.tmp" "$WASM_EXECUTOR_PID_FILE"
                    exit 0
                fi
            fi
            sleep 0.05
        done
    ) &
    reporter=$!
fi

interrupted=0
# shellcheck disable=SC2329 # the traps below call these
stop() {
    interrupted=1
    # Before the container exists, the client is stopped instead.
    docker stop --time 10 "$name" >/dev/null 2>&1 || kill -TERM "$child" 2>/dev/null || true
}
# shellcheck disable=SC2329
pass() {
    interrupted=1
    docker kill --signal "$1" "$name" >/dev/null 2>&1 || true
}
# shellcheck disable=SC2329
finish() {
    [[ -z "$reporter" ]] || kill "$reporter" 2>/dev/null || true
    docker rm --force "$name" >/dev/null 2>&1 || true
}
trap stop TERM INT
trap 'pass USR1' USR1
trap 'pass USR2' USR2
trap 'pass HUP' HUP
trap finish EXIT

# A trapped signal ends `wait` early (status > 128): wait again until the client itself exits.
status=125
while :; do
    interrupted=0
    rc=0
    wait "$child" || rc=$?
    if [[ $interrupted -eq 0 ]]; then
        status=$rc
        break
    fi
    # 127: the client's status was already reported, by the wait a signal followed.
    [[ $rc -ne 127 ]] || break
    status=$rc
done
exit "$status"

#!/usr/bin/env bash
# Tests the executor's OCI image: builds it (deploy/image/build.sh), runs the conformance suite
# against the executor in containers of it (deploy/image/launch.sh as the suite's launcher),
# checks the hardening facts with `docker inspect` and /proc (non-root user, read-only root
# filesystem, no capabilities, the state volume) and runs it once as an operator would (its
# own defaults: TCP on 0.0.0.0, which needs a token, state in a named volume).
#
#   deploy/image/test.sh [--executor PATH] [--suite PATH] [-- TEST-ARGS...]
#
#   --executor PATH  the executor to put in the image (default: build.sh's,
#                    target/release/wasm-executor-wasmtime); named wasm-executor-<runtime>, which
#                    tells the suite the runtime under test
#   --suite PATH     the conformance test binary (default: located, and built when stale, with
#                    scripts/suite.sh path)
#   TEST-ARGS        more arguments for the test binary (filters, --skip ...)
#
# Uses the engine DOCKER_HOST names when it answers, else the project's private engine
# (eval/baseline/dockerd.sh), started when not running and then stopped at the end. Needs root:
# the private engine does, and the launcher hands the suite's directories to the image's user.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
started=$SECONDS
# shellcheck source=SCRIPTDIR/../../scripts/common.sh
source scripts/common.sh # use_docker_engine; its step and die are redefined below

log() { echo "test.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}
step() { printf '\n==> image: %s\n' "$*" >&2; }

executor=""
suite=""
test_args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --executor)
        [[ $# -ge 2 ]] || die "--executor needs a path"
        executor="$(realpath "$2")"
        shift 2
        ;;
    --suite)
        [[ $# -ge 2 ]] || die "--suite needs a path"
        suite="$(realpath "$2")"
        shift 2
        ;;
    --)
        shift
        test_args=("$@")
        break
        ;;
    -h | --help)
        sed -n '2,/^set -euo/{s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $(id -u) -eq 0 ]] || die "needs root (the private Docker engine, handing test directories to the image's user)"

# --- the engine ------------------------------------------------------------------------------
use_docker_engine

scratch="$(mktemp -d)"
prod=wasm-executor-image-test-$$
# Containers of launch.sh whose launcher is gone (named after the launcher's pid).
leftovers() {
    local name
    docker ps --all --filter label=org.owwasm.launcher --format '{{.Names}}' | while read -r name; do
        tr '\0' ' ' <"/proc/${name##*-}/cmdline" 2>/dev/null | grep -q 'launch\.sh' || echo "$name"
    done
}
cleanup() {
    local name
    for name in $(leftovers 2>/dev/null || true); do
        docker rm --force "$name" >/dev/null 2>&1 || true
    done
    docker rm --force --volumes "$prod" >/dev/null 2>&1 || true
    docker volume rm "$prod" >/dev/null 2>&1 || true
    rm -rf "$scratch"
    if [[ $STARTED_ENGINE -eq 1 ]]; then
        eval/baseline/dockerd.sh stop >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT

# --- the suite and the executor, of one build ------------------------------------------------
if [[ -z "$suite" ]]; then
    step "the conformance suite (scripts/suite.sh path)"
    suite="$(scripts/suite.sh path)"
fi
[[ -n "$executor" ]] || executor="${CARGO_TARGET_DIR:-$root/target}/release/wasm-executor-wasmtime"
[[ -x "$suite" ]] || die "no conformance test binary at '$suite'"

step "building the image"
build_args=(--tag wasm-executor:image-test)
[[ -z "$executor" ]] || build_args+=(--executor "$executor")
image_line="$(deploy/image/build.sh "${build_args[@]}")"
echo "$image_line"
image=wasm-executor:image-test
export WASM_EXECUTOR_IMAGE="$image"

# --- the image's hardening facts -------------------------------------------------------------
step "hardening: the image"
config="$(docker image inspect --format '{{.Config.User}}|{{json .Config.Volumes}}|{{json .Config.Entrypoint}}|{{len .RootFS.Layers}}' "$image")"
IFS='|' read -r user volumes entrypoint layers <<<"$config"
[[ "$user" =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || die "the image's user is '$user', not a numeric non-root uid:gid"
[[ "$volumes" == '{"/var/lib/wasm-executor":{}}' ]] || die "the image's volumes are $volumes, not only /var/lib/wasm-executor"
[[ "$entrypoint" == '["/usr/local/bin/wasm-executor"]' ]] || die "unexpected entrypoint $entrypoint"
[[ "$layers" -eq 1 ]] || die "the image has $layers layers, not one (FROM scratch, one ADD)"
log "user $user, volume /var/lib/wasm-executor, entrypoint $entrypoint, $layers layer"

step "hardening: a container as the suite runs it"
state="$scratch/state"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
WASM_EXECUTOR_PID_FILE="$scratch/pid" deploy/image/launch.sh /unused \
    --listen "127.0.0.1:$port" --state-dir "$state" 2>"$scratch/launch.log" &
launcher=$!
for _ in $(seq 300); do
    [[ -s "$scratch/pid" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.05
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || {
    cat "$scratch/launch.log" >&2
    die "the launched executor did not answer /health"
}
pid="$(cat "$scratch/pid")"
name="wasm-executor-launch-$launcher"
facts="$(docker inspect --format '{{.Config.User}}|{{.HostConfig.ReadonlyRootfs}}|{{json .HostConfig.CapDrop}}|{{json .HostConfig.SecurityOpt}}' "$name")"
IFS='|' read -r user readonly capdrop secopt <<<"$facts"
[[ "$readonly" == true ]] || die "$name: ReadonlyRootfs is $readonly"
[[ "$capdrop" == '["ALL"]' ]] || die "$name: CapDrop is $capdrop"
[[ "$secopt" == *no-new-privileges* ]] || die "$name: SecurityOpt is $secopt"
# The process itself, seen from the host: its user, its capabilities, its root mount.
uids="$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status")"
[[ "$uids" == "${user%%:*} ${user%%:*} ${user%%:*} ${user%%:*}" ]] || die "the executor (pid $pid) runs with uids $uids"
capeff="$(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")"
[[ "$capeff" =~ ^0+$ ]] || die "the executor has capabilities $capeff"
rootopts="$(awk '$5 == "/" { print $6 }' "/proc/$pid/mountinfo")"
[[ ",$rootopts," == *,ro,* ]] || die "the executor's root filesystem is mounted $rootopts"
[[ "$(stat -c %u "$state/cache")" == "${user%%:*}" ]] || die "the cache was not written by the image's user"
kill -TERM "$launcher"
wait "$launcher" || die "the launcher exited with $? after SIGTERM"
if docker inspect "$name" >/dev/null 2>&1; then
    die "$name is left behind"
fi
log "uid ${user%%:*}, no capabilities, root filesystem $rootopts, no new privileges; stopped by SIGTERM, removed"

step "as an operator runs it: TCP on 0.0.0.0 with a token, state in a named volume, read-only root"
token="$scratch/token"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token"
chown "${user%%:*}:${user#*:}" "$token"
chmod 0400 "$token"
docker volume create "$prod" >/dev/null
# Host networking rather than a published port: the engine's bridge is shared by every engine on
# the machine (another one stopping removes docker0). Only the port differs from the image's
# default listen address, through the environment variable it is set with.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
docker run --detach --name "$prod" --pull never --read-only --cap-drop ALL \
    --security-opt no-new-privileges --network host --env "WASM_EXECUTOR_LISTEN=0.0.0.0:$port" \
    --mount "type=volume,source=$prod,target=/var/lib/wasm-executor" \
    --mount "type=bind,source=$token,target=/run/secrets/wasm-executor-token,readonly" \
    "$image" --auth-token-file /run/secrets/wasm-executor-token >/dev/null
url="http://127.0.0.1:$port"
for _ in $(seq 300); do
    curl -sf "$url/health" >/dev/null && break
    sleep 0.05
done
curl -sf "$url/health" >/dev/null || {
    docker logs "$prod" >&2
    die "the executor did not answer on $url"
}
auth=(-H "Authorization: Bearer $(cat "$token")" -H "Content-Type: application/json")
[[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Content-Type: application/json" "$url/containers")" == 401 ]] ||
    die "an API request without the token was not refused"
printf '{"value":{"name":"add","main":"main","binary":true,"code":"%s"}}' \
    "$(base64 -w0 actions/dist/add.wasm)" >"$scratch/init.json"
curl -sf "${auth[@]}" --data-binary "@$scratch/init.json" "$url/add/init" >/dev/null ||
    die "/init of add failed"
result="$(curl -sf "${auth[@]}" -d '{"value":{"param1":40,"param2":2}}' "$url/add/run")"
[[ "$result" == '{"result":42}' ]] || die "add answered $result"
# The compiled module went to the volume, written by the image's user.
volume_dir="$(docker volume inspect --format '{{.Mountpoint}}' "$prod")"
[[ "$(stat -c '%u %a' "$volume_dir")" == "${user%%:*} 700" ]] ||
    die "the volume's root is $(stat -c '%u %a' "$volume_dir"), not the image's user with mode 700"
find "$volume_dir/cache" -name '*.bin' | grep -q . || die "no compiled module in the volume's cache"
docker stop --time 10 "$prod" >/dev/null
exit_code="$(docker inspect --format '{{.State.ExitCode}}' "$prod")"
[[ "$exit_code" -eq 0 ]] || die "the executor exited with $exit_code after docker stop"
log "0.0.0.0:$port: 401 without the token, add 40+2 = 42, cache in volume $prod, exit 0 on docker stop"

# --- the conformance suite against the container ---------------------------------------------
# Nothing is skipped: the launcher reports the executor's own pid (WASM_EXECUTOR_PID_FILE), so
# the tests that read its memory and descriptors in /proc measure the executor in its container.
# The launcher ignores the binary's path; its name tells the suite which runtime to expect.
step "the conformance suite against the container ($(basename "$suite"))"
began=$SECONDS
WASM_EXECUTOR_LAUNCHER="$here/launch.sh" WASM_EXECUTOR_LAUNCHER_REPORTS_PID=1 WASM_EXECUTOR_BIN="$executor" \
    "$suite" --test-threads 2 "${test_args[@]}"
log "the suite took $((SECONDS - began)) s"
left="$(leftovers)"
[[ -z "$left" ]] || die "containers left behind by the suite: $left"

step "image tests passed in $((SECONDS - started)) s: $image_line"

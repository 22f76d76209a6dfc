#!/usr/bin/env bash
# Builds the baseline's vanilla Docker action images: one image per native action, holding
# only the action-runtime proxy (eval/baseline/proxy) and the action's static executable.
#
#   eval/baseline/build-images.sh [ACTION | NAME=PATH]...
#
# ACTION packs actions/dist/native/ACTION (built with `actions/build.sh --native` when missing)
# as owwasm-baseline/ACTION:latest; NAME=PATH packs the executable PATH as
# owwasm-baseline/NAME:latest. Default: add echo hash net. The docker CLI talks to whatever
# DOCKER_HOST names (see dockerd.sh env). Prints one line per image on stdout:
# "owwasm-baseline/NAME:latest <image id>". Idempotent: Docker's build cache makes a rebuild
# of unchanged files a no-op, and the proxy is rebuilt only when its sources change.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

log() { echo "build-images.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}
case "${1-}" in
-h | --help)
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

[[ $# -gt 0 ]] || set -- add echo hash net

# --- what to pack: image name → executable ---------------------------------------------------
names=()
paths=()
missing=() # actions whose native binary has to be built first
for arg in "$@"; do
    if [[ "$arg" == *=* ]]; then
        name="${arg%%=*}"
        path="${arg#*=}"
        [[ -f "$path" ]] || die "$arg: no such file"
        path="$(cd "$(dirname "$path")" && pwd)/$(basename "$path")"
    else
        name="$arg"
        path="$root/actions/dist/native/$name"
        [[ -f "$path" ]] || missing+=("$name")
    fi
    # Docker repository names are lower case: letters, digits and . _ - inside.
    [[ "$name" =~ ^[a-z0-9]+([._-][a-z0-9]+)*$ ]] || die "'$name' is not a valid image name"
    names+=("$name")
    paths+=("$path")
done

if [[ ${#missing[@]} -gt 0 ]]; then
    log "building the native actions ${missing[*]}"
    "$root/actions/build.sh" --native "${missing[@]}"
fi

# --- the proxy: static, no cgo (Go's build cache makes this quick when nothing changed) -------
proxy="$root/target/baseline/proxy"
mkdir -p "$(dirname "$proxy")"
(cd "$here/proxy" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$proxy" .)

# --- the images ----------------------------------------------------------------------------
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
    die "no Docker engine at ${DOCKER_HOST:-the default socket}; start one with: eval \"\$($here/dockerd.sh start)\""

ctx="$(mktemp -d)"
errors="$(mktemp)"
trap 'rm -rf "$ctx" "$errors"' EXIT
for i in "${!names[@]}"; do
    name="${names[$i]}"
    image="owwasm-baseline/$name:latest"
    # The build context holds exactly the two files the Dockerfile copies.
    rm -f "$ctx/proxy" "$ctx/exec"
    cp "$proxy" "$ctx/proxy"
    cp "${paths[$i]}" "$ctx/exec"
    chmod 755 "$ctx/proxy" "$ctx/exec"
    # The classic builder: FROM scratch needs no image and no network, and the engine
    # (docker.io 20.10) needs no buildx plugin for it. Its deprecation notice is only shown
    # when the build fails.
    if ! id="$(DOCKER_BUILDKIT=0 docker build --quiet --file "$here/Dockerfile" \
        --label "org.owwasm.baseline.action=$name" --tag "$image" "$ctx" 2>"$errors")"; then
        cat "$errors" >&2
        die "building $image failed"
    fi
    echo "$image $id"
done
# Images replaced by a rebuild are left untagged: drop those of ours.
docker image prune --force --filter "label=org.owwasm.baseline.action" >/dev/null

#!/usr/bin/env bash
# Builds Docker images that behave like OpenWhisk's own action runtimes, from their sources, on
# Debian bookworm's own `nodejs` and `python3` (no Docker Hub: the base is a debootstrap'd rootfs).
#
#   eval/baseline/runtimes/build.sh --nodejs-source DIR --python-source DIR --go-source DIR
#                                   [--only nodejs|python] [--slim] [--cache DIR] [--mirror URL]
#
#   --nodejs-source DIR  a tree of apache/openwhisk-runtime-nodejs (needs core/nodejsActionBase)
#   --python-source DIR  a tree of apache/openwhisk-runtime-python (needs core/python3Action)
#   --go-source DIR      a tree of apache/openwhisk-runtime-go (its actionloop proxy, main/)
#   --only LANG          build only owwasm-baseline/action-LANG (then only its sources are needed)
#   --slim               leave out the extra packages upstream preinstalls for actions
#                        (imagemagick, graphicsmagick, zip, unzip; scrapy, lxml, requests, ...)
#   --cache DIR          where the rootfs tarball is kept
#                        (default ${XDG_CACHE_HOME:-$HOME/.cache}/owwasm)
#   --mirror URL         Debian mirror (default http://deb.debian.org/debian)
#
# Builds owwasm-baseline/debian-bookworm:latest (the imported rootfs, re-imported only when the
# cached tarball changes), owwasm-baseline/action-nodejs:latest (like action-nodejs-v18) and
# owwasm-baseline/action-python:latest (like action-python-v3.11). Needs root (debootstrap, which
# is installed with apt-get when missing), a running Docker engine (DOCKER_HOST, e.g.
# eval "$(eval/baseline/dockerd.sh start)") and Go >= 1.21 on the host for the proxy.
# Reads no standard input; running it again rebuilds from Docker's layer cache.
set -euo pipefail

log() { echo "build.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}
usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

nodejs_src="" python_src="" go_src="" only="" slim=0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/owwasm"
mirror="http://deb.debian.org/debian"
while [[ $# -gt 0 ]]; do
    case "$1" in
    --nodejs-source) nodejs_src="${2:?--nodejs-source needs a directory}"; shift 2 ;;
    --python-source) python_src="${2:?--python-source needs a directory}"; shift 2 ;;
    --go-source) go_src="${2:?--go-source needs a directory}"; shift 2 ;;
    --only) only="${2:?--only needs nodejs or python}"; shift 2 ;;
    --slim) slim=1; shift ;;
    --cache) cache="${2:?--cache needs a directory}"; shift 2 ;;
    --mirror) mirror="${2:?--mirror needs a URL}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
    esac
done

build_nodejs=1 build_python=1
case "$only" in
"") ;;
nodejs) build_python=0 ;;
python) build_nodejs=0 ;;
*) die "--only takes nodejs or python, not '$only'" ;;
esac

# need_file DIR REL WHAT: DIR/REL must exist.
need_file() { [[ -e "$1/$2" ]] || die "$1/$2 is missing: is $1 a tree of $3?"; }
if ((build_nodejs)); then
    [[ -n "$nodejs_src" ]] || die "--nodejs-source DIR is required (or --only python)"
    nodejs_src="$(realpath "$nodejs_src")"
    for f in app.js runner.js package.json src/service.js platform/platform.js; do
        need_file "$nodejs_src" "core/nodejsActionBase/$f" openwhisk-runtime-nodejs
    done
fi
if ((build_python)); then
    [[ -n "$python_src" ]] || die "--python-source DIR is required (or --only nodejs)"
    [[ -n "$go_src" ]] || die "--go-source DIR is required for the python image (or --only nodejs)"
    python_src="$(realpath "$python_src")"
    go_src="$(realpath "$go_src")"
    need_file "$python_src" core/python3Action/bin/compile openwhisk-runtime-python
    need_file "$python_src" core/python3Action/lib/launcher.py openwhisk-runtime-python
    need_file "$go_src" main/proxy.go openwhisk-runtime-go
    need_file "$go_src" go.mod openwhisk-runtime-go
    command -v go >/dev/null || die "go (>= 1.21) is needed on the host to build the actionloop proxy"
fi

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap)"
command -v docker >/dev/null || die "docker (the client) is missing"
docker info >/dev/null 2>&1 ||
    die "no Docker engine answers${DOCKER_HOST:+ at $DOCKER_HOST}; start one: eval \"\$(eval/baseline/dockerd.sh start)\""

# --- the base: a minimal bookworm rootfs, debootstrap'd once and cached as a tarball --------
base_image=owwasm-baseline/debian-bookworm:latest
arch="$(dpkg --print-architecture)"
mkdir -p "$cache"
tarball="$cache/debian-bookworm-minbase-$arch.tar"
if [[ ! -s "$tarball" ]]; then
    if ! command -v debootstrap >/dev/null; then
        log "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap </dev/null >&2 ||
            { apt-get update </dev/null >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap </dev/null >&2; } ||
            die "could not install debootstrap"
    fi
    rootfs="$(mktemp -d "$cache/rootfs.XXXXXX")"
    # A failed debootstrap may leave proc, sys or dev mounted in the rootfs: unmounted first,
    # and rm never crosses into another file system.
    drop_rootfs() {
        local m
        awk -v r="$rootfs/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r |
            while read -r m; do umount -l "$m" || true; done
        rm -rf --one-file-system "${rootfs:?}"
    }
    trap drop_rootfs EXIT
    log "debootstrap --variant=minbase bookworm from $mirror (a few minutes; log: $cache/debootstrap.log)"
    debootstrap --variant=minbase --arch="$arch" bookworm "$rootfs" "$mirror" </dev/null >"$cache/debootstrap.log" 2>&1 ||
        { tail -n 20 "$cache/debootstrap.log" >&2; die "debootstrap failed"; }
    security="${mirror%/debian}/debian-security"
    cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
    # What Docker's debian images do: no recommends-cache, no docs churn, lists not kept.
    rm -rf --one-file-system "${rootfs:?}"/var/lib/apt/lists/* "${rootfs:?}"/var/cache/apt/*.bin \
        "${rootfs:?}"/var/cache/apt/archives/*.deb "${rootfs:?}"/var/log/* "${rootfs:?}"/tmp/*
    tar --numeric-owner --xattrs -C "$rootfs" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    drop_rootfs
    trap - EXIT
fi
sum="$(sha256sum "$tarball" | cut -c1-16)"
if [[ "$(docker image inspect -f '{{index .Config.Labels "org.owwasm.rootfs"}}' "$base_image" 2>/dev/null)" != "$sum" ]]; then
    log "importing $tarball as $base_image"
    docker import \
        --change "LABEL org.owwasm.rootfs=$sum" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' \
        "$tarball" "$base_image" >/dev/null
fi

# --- build contexts: the runtimes' files are copied from the given trees at build time ------
ctx_root="$(mktemp -d "${TMPDIR:-/tmp}/owwasm-runtimes.XXXXXX")"
trap 'rm -rf "$ctx_root"' EXIT

# Locally added CAs (a TLS-inspecting egress proxy) are trusted in the npm build stage only.
extra_ca() {
    mkdir -p "$1/ca"
    local crt
    for crt in /usr/local/share/ca-certificates/*.crt; do
        [[ -e "$crt" ]] && cp "$crt" "$1/ca/"
    done
    return 0
}

# docker_build TAG CONTEXT: the build's output goes to CONTEXT.log, its tail shown on failure.
docker_build() {
    log "building $1"
    if ! docker build -t "$1" "$2" </dev/null >"$2.log" 2>&1; then
        tail -n 40 "$2.log" >&2
        die "docker build of $1 failed"
    fi
}

if ((build_nodejs)); then
    ctx="$ctx_root/nodejs"
    mkdir -p "$ctx/nodejsAction"
    base="$nodejs_src/core/nodejsActionBase"
    # What the gradle build of core/nodejs18Action puts next to its Dockerfile.
    cp -r "$base/app.js" "$base/runner.js" "$base/package.json" "$base/src" "$base/platform" "$ctx/nodejsAction/"
    [[ -e "$base/buildtemplate.yaml" ]] && cp "$base/buildtemplate.yaml" "$ctx/nodejsAction/"
    cp "$base/package.json" "$ctx/package.json"
    extra_ca "$ctx"
    extras="imagemagick graphicsmagick zip unzip"
    ((slim)) && extras=""
    cat >"$ctx/Dockerfile" <<EOF
# Generated by eval/baseline/runtimes/build.sh: core/nodejs18Action/Dockerfile on Debian's node.
FROM $base_image AS npm
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
        nodejs npm ca-certificates
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
COPY package.json /
RUN cd / && npm install --no-package-lock --production --no-audit --no-fund \\
    && npm cache clean --force

FROM $base_image
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
        nodejs $extras \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR /nodejsAction
COPY nodejsAction/ /nodejsAction/
COPY package.json /
COPY --from=npm /node_modules /node_modules
EXPOSE 8080
CMD node --expose-gc app.js
EOF
    docker_build owwasm-baseline/action-nodejs:latest "$ctx"
    log "node in the image: $(docker run --rm owwasm-baseline/action-nodejs:latest node --version)"
fi

if ((build_python)); then
    ctx="$ctx_root/python"
    mkdir -p "$ctx/bin" "$ctx/lib"
    log "building the actionloop proxy from $go_src ($(go version | cut -d' ' -f3))"
    (cd "$go_src/main" && CGO_ENABLED=0 GO111MODULE=on GOTOOLCHAIN=local GOFLAGS=-mod=mod \
        go build -trimpath -o "$ctx/bin/proxy" .) </dev/null >&2 || die "go build of the proxy failed"
    cp "$python_src/core/python3Action/bin/compile" "$ctx/bin/compile"
    cp "$python_src/core/python3Action/lib/launcher.py" "$ctx/lib/launcher.py"
    chmod 755 "$ctx/bin/compile" "$ctx/bin/proxy"
    # Upstream's requirements.txt, installed with pip there; Debian's packages of them here.
    extras="python3-bs4 python3-httplib2 python3-kafka python3-lxml python3-dateutil python3-requests
        python3-scrapy python3-simplejson python3-twisted python3-netifaces python3-setuptools
        python3-pip python3-six python3-wheel zip gcc libc6-dev"
    extras="$(echo "$extras" | tr -s ' \n' ' ')"
    ((slim)) && extras=""
    cat >"$ctx/Dockerfile" <<EOF
# Generated by eval/baseline/runtimes/build.sh: core/python311Action/Dockerfile on Debian's python3.
FROM $base_image
ENV LANG=C.UTF-8
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
        python3 python3-virtualenv ${extras} \\
    && rm -rf /var/lib/apt/lists/* \\
    && ln -s /usr/bin/python3 /usr/local/bin/python \\
    && ln -s /usr/bin/python3 /usr/local/bin/python3
RUN mkdir -p /action
WORKDIR /
COPY bin/proxy /bin/proxy
COPY bin/compile /bin/compile
COPY lib/launcher.py /lib/launcher.py
ENV OW_LOG_INIT_ERROR=1
ENV OW_WAIT_FOR_ACK=1
ENV OW_EXECUTION_ENV=openwhisk/action-python-v3.11
ENV OW_COMPILER=/bin/compile
EXPOSE 8080
ENTRYPOINT ["/bin/proxy"]
EOF
    docker_build owwasm-baseline/action-python:latest "$ctx"
    log "python in the image: $(docker run --rm --entrypoint python owwasm-baseline/action-python:latest --version)"
fi

docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^owwasm-baseline/\(action-nodejs\|action-python\|debian-bookworm\):' >&2 || true

#!/usr/bin/env bash
# Builds the executor's OCI image with the local Docker engine, from scratch (no base image, no
# registry, no network): the executor binary, the shared libraries it needs (with the dynamic
# loader), an unprivileged user and the state directory, nothing else.
#
#   deploy/image/build.sh [--executor PATH] [--tag NAME] [--no-smoke]
#
#   --executor PATH  the executor binary (default: target/release/wasm-executor-wasmtime, else
#                    target/release/wasm-executor). Any backend, and any of x86_64, aarch64 and
#                    armv7 binaries (target/cross/<triple>/wasm-executor-<backend>): the ELF
#                    header decides the image's platform and where the libraries come from
#                    (this host's /lib/<triplet>, or /usr/<triplet>/lib for a cross binary).
#   --tag NAME       the image's name (default: wasm-executor:<backend>, the binary's name after
#                    "wasm-executor-" or "latest", with -arm64 or -armv7 for a foreign platform).
#   --no-smoke       skip the check that the image starts (`wasm-executor --version` in it; for
#                    a foreign platform only when binfmt can run its binaries).
#
# The docker CLI talks to whatever DOCKER_HOST names (eval/baseline/dockerd.sh start prints it).
# Prints the image's name, id, platform and size on stdout; messages go to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

log() { echo "build.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}
usage() { sed -n '2,/^set -euo/{s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

# The image's user: a fixed, unprivileged id (distroless' "nonroot"), named in /etc/passwd.
uid=65532
executor=""
tag=""
smoke=1
while [[ $# -gt 0 ]]; do
    case "$1" in
    --executor)
        [[ $# -ge 2 ]] || die "--executor needs a path"
        executor="$2"
        shift 2
        ;;
    --tag)
        [[ $# -ge 2 ]] || die "--tag needs a name"
        tag="$2"
        shift 2
        ;;
    --no-smoke)
        smoke=0
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        usage >&2
        exit 2
        ;;
    esac
done

if [[ -z "$executor" ]]; then
    bin="${CARGO_TARGET_DIR:-$root/target}/release"
    executor="$bin/wasm-executor-wasmtime"
fi
[[ -f "$executor" ]] || die "$executor: no such file (build it first: make build)"
executor="$(realpath "$executor")"
for tool in readelf tar sha256sum; do
    command -v "$tool" >/dev/null || die "$tool is missing (Debian: binutils, tar, coreutils)"
done

# --- the binary's platform, from its ELF header ---------------------------------------------
machine="$(LC_ALL=C readelf -h "$executor" 2>/dev/null | sed -n 's/^ *Machine: *//p')" ||
    die "$executor is not an ELF file"
case "$machine" in
*X86-64*) platform=linux/amd64 arch=amd64 triplet=x86_64-linux-gnu ;;
AArch64) platform=linux/arm64 arch=arm64 triplet=aarch64-linux-gnu ;;
ARM) platform=linux/arm/v7 arch=armv7 triplet=arm-linux-gnueabihf ;;
*) die "$executor: unsupported machine '${machine:-not ELF}' (x86_64, aarch64 and armv7 are)" ;;
esac
host_machine="$(uname -m)"
case "$host_machine" in
x86_64) host_arch=amd64 ;;
aarch64) host_arch=arm64 ;;
armv7l) host_arch=armv7 ;;
*) host_arch="$host_machine" ;;
esac
# Where this machine keeps the target's libraries: its own multiarch directories, and Debian's
# cross packages (libc6-arm64-cross, libgcc-s1-arm64-cross, ...) under /usr/<triplet>/lib.
search=("/usr/$triplet/lib" "/lib/$triplet" "/usr/lib/$triplet")
if [[ "$arch" == "$host_arch" ]]; then
    search=("/lib/$triplet" "/usr/lib/$triplet" "/usr/$triplet/lib")
fi

backend="$(basename "$executor")"
backend="${backend#wasm-executor}"
backend="${backend#-}"
if [[ -z "$tag" ]]; then
    tag="wasm-executor:${backend:-latest}"
    [[ "$arch" == "$host_arch" ]] || tag="$tag-$arch"
fi

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
    die "no Docker engine at ${DOCKER_HOST:-the default socket}; start one with: eval \"\$($root/eval/baseline/dockerd.sh start)\""

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
rootfs="$ctx/rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/lib/$triplet" "$rootfs/etc" "$rootfs/tmp" "$rootfs/var/lib"
install -m 0755 "$executor" "$rootfs/usr/local/bin/wasm-executor"

# --- the shared libraries: DT_NEEDED, transitively, plus the program interpreter -------------
needed() { LC_ALL=C readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }
find_lib() {
    local dir
    for dir in "${search[@]}"; do
        if [[ -f "$dir/$1" ]]; then
            echo "$dir/$1"
            return 0
        fi
    done
    return 1
}
interp="$(LC_ALL=C readelf -l "$executor" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')"
[[ -n "$interp" ]] || die "$executor is statically linked: nothing to do for the libraries"
libs=()
queue=("$executor")
declare -A seen=()
while [[ ${#queue[@]} -gt 0 ]]; do
    file="${queue[0]}"
    queue=("${queue[@]:1}")
    while read -r soname; do
        [[ -n "$soname" && -z "${seen[$soname]-}" ]] || continue
        seen[$soname]=1
        # The loader is copied to its own path below.
        [[ "$soname" == "$(basename "$interp")" ]] && continue
        path="$(find_lib "$soname")" || die "$soname (needed by $(basename "$file")) not found in ${search[*]}"
        libs+=("$soname")
        queue+=("$path")
        # The real file under the soname: the image has no symlinks to follow.
        install -m 0644 "$(realpath "$path")" "$rootfs/lib/$triplet/$soname"
    done < <(needed "$file")
done
loader="$(find_lib "$(basename "$interp")")" || die "the program interpreter $interp was not found in ${search[*]}"
mkdir -p "$rootfs$(dirname "$interp")"
install -m 0755 "$(realpath "$loader")" "$rootfs$interp"
log "$(basename "$executor") ($machine): ${libs[*]} and $interp"

# --- the user, name resolution, the state directory -----------------------------------------
cat >"$rootfs/etc/passwd" <<EOF
root:x:0:0:root:/root:/sbin/nologin
wasm-executor:x:$uid:$uid:wasm-executor:/var/lib/wasm-executor:/sbin/nologin
EOF
cat >"$rootfs/etc/group" <<EOF
root:x:0:
wasm-executor:x:$uid:
EOF
# The HTTP GET capability resolves names with glibc (nss files and dns are built into libc);
# Docker supplies /etc/hosts and /etc/resolv.conf at run time.
echo "hosts: files dns" >"$rootfs/etc/nsswitch.conf"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/nsswitch.conf"
chmod 1777 "$rootfs/tmp"
mkdir -m 0700 "$ctx/state"

# One archive, the same bytes for the same inputs (sorted, fixed times, numeric owners): root
# owns everything but the state directory, which belongs to the image's user.
tar_opts=(--sort=name --mtime=@0 --numeric-owner --format=gnu)
tar -C "$rootfs" "${tar_opts[@]}" --owner=0 --group=0 -cf "$ctx/rootfs.tar" .
tar -C "$ctx" "${tar_opts[@]}" --owner="$uid" --group="$uid" --no-recursion \
    --transform 's,^state$,./var/lib/wasm-executor,' -rf "$ctx/rootfs.tar" state
rm -rf "$rootfs" "$ctx/state"

# --- the image ------------------------------------------------------------------------------
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
sha="$(sha256sum "$executor" | cut -d' ' -f1)"
errors="$ctx/errors"
# The classic builder: FROM scratch with ADD needs no image, no network and no emulation (no
# RUN step), so a foreign platform builds here too; the engine (docker.io 20.10) needs no buildx.
if ! id="$(DOCKER_BUILDKIT=0 docker build --quiet --platform "$platform" \
    --file "$here/Dockerfile" --tag "$tag" \
    --label "org.opencontainers.image.title=wasm-executor" \
    --label "org.opencontainers.image.description=OpenWhisk WebAssembly executor (${backend:-default build})" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.owwasm.executor.backend=${backend:-unknown}" \
    --label "org.owwasm.executor.sha256=$sha" \
    "$ctx" 2>"$errors")"; then
    cat "$errors" >&2
    die "building $tag failed"
fi
# The image a rebuild replaced is left untagged: drop the dangling ones of ours.
docker image prune --force --filter "label=org.opencontainers.image.title=wasm-executor" >/dev/null

# --- does it start? -------------------------------------------------------------------------
if [[ "$smoke" -eq 1 ]]; then
    runnable=0
    if [[ "$arch" == "$host_arch" ]]; then
        runnable=1
    elif [[ "$arch" == arm64 && -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] ||
        [[ "$arch" == armv7 && -e /proc/sys/fs/binfmt_misc/qemu-arm ]]; then
        runnable=1
    fi
    if [[ "$runnable" -eq 1 ]]; then
        if ! out="$(docker run --rm --pull never --platform "$platform" --read-only --network none \
            "$tag" --version 2>&1)"; then
            echo "$out" >&2
            die "$tag does not start"
        fi
        log "$tag starts: $out"
    else
        log "$tag: not started (no binfmt emulation for $platform here)"
    fi
fi

size="$(docker image inspect --format '{{.Size}}' "$tag")"
printf '%s %s %s %s bytes (%s MB)\n' "$tag" "$id" "$platform" "$size" \
    "$(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1000000 }')"

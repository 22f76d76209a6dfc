#!/usr/bin/env bash
# Checks deploy/pi/.
#
#   deploy/pi/verify.sh
#       The quick checks (seconds; `make test` runs them): shellcheck on every script here;
#       `systemd-analyze verify` and `systemd-analyze security --offline` on both units with the
#       drop-ins of each board; that every WASM_EXECUTOR_* variable set here is a flag of the
#       executor (config.rs) and every OPENWHISK_* one is read by the unit or standalone.conf;
#       that the boards' executor and OpenWhisk limits agree and fit the board's memory; that
#       the runtime manifest has the wasm:0.1 kind. Installs shellcheck and systemd (for
#       systemd-analyze) from Debian when missing (as root or with passwordless sudo).
#
#   sudo deploy/pi/verify.sh --rootfs DIR [--arch arm64|amd64] [--executor PATH] [--boot]
#                            [--openwhisk-jar PATH] [--java-extra-opts OPTS] [--bind-ro PATH]...
#       The installer in a Debian 12 root file system (minutes; as root). DIR is made with
#       debootstrap when it holds no system yet (arm64 by default: through qemu-user, binfmt_misc
#       is set up for it when needed). In a chroot, in a network namespace of its own: install.sh
#       with a test operator key, again with the same arguments and once more without any (both
#       must change nothing: file tree, modes, owners, times and contents compared), the
#       executor started exactly as its unit says (user, environment files, drop-ins, ExecStart),
#       /health, the token, a portable and (when the precompiler is built) a signed precompiled
#       `add` action through /init and /run, wasm-pi-health, then uninstall.sh, install.sh
#       again (the token must survive) and a last idempotency check.
#       --executor  the binary to install (default: for arm64
#                   target/cross/aarch64-unknown-linux-gnu/wasm-executor-wasmtime (else
#                   wasm-executor-wamr), for amd64 target/release/wasm-executor-wasmtime)
#       --boot      then boot DIR with systemd-nspawn (private network) and check the real
#                   services: active, their sandbox seen from inside (no capabilities,
#                   seccomp, read-only /usr and /etc, hidden /root, writable state), the
#                   probe through the unit, wasm-pi-health. Only for DIR of this machine's
#                   architecture (seccomp filters and qemu-user do not mix).
#       --openwhisk-jar  also install this standalone jar (install.sh installs Java in DIR) and,
#                   with --boot, create and invoke the wasm action through OpenWhisk's REST API
#       --java-extra-opts  JAVA_EXTRA_OPTS written into DIR's /etc/openwhisk/standalone.env
#       --bind-ro   a host path the booted system needs at the same place (repeatable)
#       --mirror    Debian mirror for debootstrap (default http://deb.debian.org/debian)
#
# Each check prints PASS or FAIL; the last line counts them ("N passed, N failed").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR/../..
# shellcheck source=scripts/common.sh
source "$root/scripts/common.sh"

passed=0
failed=0
pass() {
    printf 'PASS  %s\n' "$*"
    passed=$((passed + 1))
}
fail() {
    printf 'FAIL  %s\n' "$*"
    failed=$((failed + 1))
}
indent() { sed 's/^/      /'; }
finish() {
    echo
    echo "verify.sh: $passed passed, $failed failed"
    [[ $failed -eq 0 ]]
}

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

rootfs=""
arch=arm64
executor=""
boot=0
ow_jar=""
java_extra=""
binds=()
mirror=http://deb.debian.org/debian
while [[ $# -gt 0 ]]; do
    case "$1" in
    --rootfs)
        rootfs="${2:?--rootfs needs a directory}"
        shift
        ;;
    --arch)
        arch="${2:?--arch needs arm64 or amd64}"
        shift
        ;;
    --executor)
        executor="${2:?--executor needs a path}"
        shift
        ;;
    --boot) boot=1 ;;
    --openwhisk-jar)
        ow_jar="${2:?--openwhisk-jar needs a path}"
        shift
        ;;
    --java-extra-opts)
        java_extra="${2:?--java-extra-opts needs options}"
        shift
        ;;
    --bind-ro)
        binds+=("--bind-ro=${2:?--bind-ro needs a path}")
        shift
        ;;
    --mirror)
        mirror="${2:?--mirror needs a URL}"
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done

# --- the quick checks ------------------------------------------------------------------------

quick_checks() {
    step "deploy/pi: quick checks"
    command -v shellcheck >/dev/null 2>&1 || ensure_packages shellcheck
    command -v systemd-analyze >/dev/null 2>&1 || ensure_packages systemd
    command -v python3 >/dev/null 2>&1 || ensure_packages python3

    local out
    if out=$(cd "$here" && shellcheck -x ./*.sh "$root/openwhisk-patch/conf/docker-stub.sh" 2>&1); then
        pass "shellcheck: $(cd "$here" && echo ./*.sh) and openwhisk-patch/conf/docker-stub.sh"
    else
        fail "shellcheck"
        printf '%s\n' "$out" | indent
    fi

    # systemd-analyze verify --root needs the system's own units (targets, sockets) and the
    # programs ExecStart= names; stand-ins for the two programs, the units as install.sh lays
    # them out.
    local system_units
    for system_units in /usr/lib/systemd/system /lib/systemd/system; do
        [[ -f "$system_units/multi-user.target" ]] && break
    done
    [[ -f "$system_units/multi-user.target" ]] || die "no systemd units on this machine (install systemd)"
    local board unit tmp
    tmp=$(mktemp -d)
    for board in 1g 4g; do
        local r="$tmp/$board" u="$tmp/$board/usr/local/lib/systemd/system"
        mkdir -p "$r/usr/lib/systemd" "$r/usr/local/bin" "$r/usr/bin" "$u/wasm-executor.service.d" \
            "$u/openwhisk-standalone.service.d" "$r/etc/systemd/system"
        cp -a "$system_units" "$r/usr/lib/systemd/system"
        printf '#!/bin/sh\n' >"$r/usr/local/bin/wasm-executor"
        printf '#!/bin/sh\n' >"$r/usr/bin/java"
        chmod +x "$r/usr/local/bin/wasm-executor" "$r/usr/bin/java"
        cp "$here/systemd/wasm-executor.service" "$here/systemd/openwhisk-standalone.service" "$u/"
        cp "$here/systemd/board-$board/wasm-executor.conf" "$u/wasm-executor.service.d/10-board.conf"
        cp "$here/systemd/board-$board/openwhisk-standalone.conf" "$u/openwhisk-standalone.service.d/10-board.conf"
        # what install.sh writes where a docker CLI is installed
        printf '[Service]\nBindReadOnlyPaths=/opt/openwhisk/conf/docker-stub.sh:/usr/bin/docker\n' \
            >"$u/openwhisk-standalone.service.d/20-docker-stub.conf"
        for unit in wasm-executor.service openwhisk-standalone.service; do
            # Warnings (an unknown key, a bad value) are failures here, not just errors.
            if out=$(systemd-analyze verify --root="$r" "$unit" 2>&1) && [[ -z "$out" ]]; then
                pass "systemd-analyze verify $unit with board-$board"
            else
                fail "systemd-analyze verify $unit with board-$board"
                printf '%s\n' "$out" | indent
            fi
            # Exposure 0-10 (systemd's scale, 10 = unprotected); --threshold is in tenths.
            if out=$(systemd-analyze security --offline=yes --root="$r" --threshold=20 "$unit" 2>&1); then
                pass "systemd-analyze security $unit with board-$board: $(printf '%s\n' "$out" | sed -n 's/^→ Overall exposure level for [^:]*: //p')"
            else
                fail "systemd-analyze security $unit with board-$board: exposure above 2.0"
                printf '%s\n' "$out" | grep -v '^✓' | indent
            fi
        done
    done
    rm -rf "$tmp"

    if out=$(python3 - "$here" "$root" <<'PY'
import json, pathlib, re, sys
here, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
problems = []

def assignments(text):
    """NAME=value pairs of Environment= lines (systemd quoting) and of environment files."""
    import shlex
    pairs = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("Environment="):
            for word in shlex.split(line[len("Environment="):]):
                name, _, value = word.partition("=")
                pairs[name] = value
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line):
            name, _, value = line.partition("=")
            pairs[name] = value.strip('"')
    return pairs

flags = set(re.findall(r'env = "([A-Z0-9_]+)"', (root / "executor/src/config.rs").read_text()))
unit = (here / "systemd/openwhisk-standalone.service").read_text()
conf = (here / "conf/standalone.conf").read_text()
sources = list((here / "systemd").glob("board-*/*.conf")) + list((here / "conf").glob("*.env"))
for path in sources:
    # every NAME= in the file, commented examples included
    for name in sorted(set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", path.read_text()))):
        if name.startswith("WASM_EXECUTOR_") and name not in flags and name not in ("WASM_EXECUTOR_URL",):
            problems.append(f"{path.relative_to(here)}: {name} is not a wasm-executor variable (executor/src/config.rs)")
        if name.startswith("OPENWHISK_") and f"${{?{name}}}" not in conf and f"${{{name}}}" not in unit:
            problems.append(f"{path.relative_to(here)}: {name} is read neither by standalone.conf nor by the unit")
        if name in ("JAVA_OPTS", "JAVA_EXTRA_OPTS") and f"${name}" not in unit:
            problems.append(f"{path.relative_to(here)}: {name} is not used by the unit")
for name in ("WASM_EXECUTOR_URL", "WASM_EXECUTOR_AUTH_TOKEN_FILE"):
    if f"${{?{name}}}" not in (root / "openwhisk-patch/conf/standalone-wasm.conf").read_text():
        problems.append(f"openwhisk-patch/conf/standalone-wasm.conf no longer reads {name}, which the unit sets")

def mb(value):
    """MiB in a size: systemd's 320M / 2G, OpenWhisk's "512 m"."""
    number, unit = re.fullmatch(r"([0-9.]+)\s*([kmgKMG]?)", value.strip()).groups()
    return float(number) * {"k": 1 / 1024, "m": 1, "g": 1024, "": 1 / 2**20}[unit.lower()]

def limit(text, key):
    found = re.findall(rf"^{key}=(\S+)", text, re.M)
    return mb(found[-1]) if found else None

for board, ram in (("1g", 1024), ("4g", 4096)):
    ex_text = (here / f"systemd/board-{board}/wasm-executor.conf").read_text()
    ow_text = (here / f"systemd/board-{board}/openwhisk-standalone.conf").read_text()
    ex, ow = assignments(ex_text), assignments(ow_text)
    if not ex_text.startswith(f"# board: {board}\n") or not ow_text.startswith(f"# board: {board}\n"):
        problems.append(f"board-{board}: the drop-ins must start with '# board: {board}' (install.sh reads it)")
    if int(ex["WASM_EXECUTOR_MAX_MEMORY_MB"]) != mb(ow["OPENWHISK_ACTION_MEMORY_MAX"]):
        problems.append(f"board-{board}: executor max memory {ex['WASM_EXECUTOR_MAX_MEMORY_MB']} MB != OpenWhisk's action max {ow['OPENWHISK_ACTION_MEMORY_MAX']}")
    if int(ex["WASM_EXECUTOR_DEFAULT_MEMORY_MB"]) != mb(ow["OPENWHISK_ACTION_MEMORY_STD"]):
        problems.append(f"board-{board}: executor default memory != OpenWhisk's action default")
    containers = mb(ow["OPENWHISK_USER_MEMORY"]) / mb(ow["OPENWHISK_ACTION_MEMORY_STD"])
    if containers > int(ex["WASM_EXECUTOR_MAX_CONCURRENT"]):
        problems.append(f"board-{board}: OpenWhisk may run {containers:.0f} containers at once, the executor {ex['WASM_EXECUTOR_MAX_CONCURRENT']}")
    for text, name in ((ex_text, "wasm-executor"), (ow_text, "openwhisk-standalone")):
        high, top = limit(text, "MemoryHigh"), limit(text, "MemoryMax")
        if high is None or top is None or not high < top:
            problems.append(f"board-{board} {name}: needs MemoryHigh below MemoryMax")
    total = limit(ex_text, "MemoryMax") + limit(ow_text, "MemoryMax")
    if total > 0.8 * ram:
        problems.append(f"board-{board}: the two MemoryMax add up to {total:.0f} MiB, more than 80 % of {ram} MiB")
    heap = re.search(r"-Xmx(\d+)([mg])", ow["JAVA_OPTS"])
    heap_mb = int(heap.group(1)) * (1024 if heap.group(2) == "g" else 1)
    if heap_mb > 0.6 * limit(ow_text, "MemoryMax"):
        problems.append(f"board-{board}: the JVM heap ({heap_mb} MiB) leaves too little of MemoryMax for metaspace, code and threads")

manifest = json.loads((root / "openwhisk-patch/conf/standalone-runtimes.json").read_text())
kinds = [r["kind"] for family in manifest["runtimes"].values() for r in family]
if "wasm:0.1" not in kinds:
    problems.append(f"standalone-runtimes.json has no wasm:0.1 kind ({kinds})")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
    ); then
        pass "variables: every WASM_EXECUTOR_* is an executor flag, every OPENWHISK_* and JAVA_* is read"
        pass "boards: executor and OpenWhisk limits agree and fit 80 % of 1 GB / 4 GB; wasm:0.1 in the runtime manifest"
    else
        fail "variables, boards or runtime manifest"
        printf '%s\n' "$out" | indent
    fi

    local file bad=""
    for file in "$here"/conf/*.env; do
        if grep -nvE '^[[:space:]]*(#.*)?$|^[A-Za-z_][A-Za-z0-9_]*=' "$file" >/dev/null; then
            bad+=" $(basename "$file")"
        fi
    done
    if [[ -z "$bad" ]]; then pass "environment files: only comments and NAME=value lines"; else fail "environment files with other lines:$bad"; fi

    if out=$("$here/install.sh" --help 2>&1) && [[ "$out" == *"--executor PATH"* ]] &&
        ! "$here/install.sh" --board 2g >/dev/null 2>&1 && "$here/uninstall.sh" --help >/dev/null &&
        "$here/health.sh" --help >/dev/null; then
        pass "install.sh, uninstall.sh, health.sh: --help; install.sh refuses --board 2g"
    else
        fail "install.sh/uninstall.sh/health.sh --help"
    fi
}

# --- the root file system ------------------------------------------------------------------

mounted=()
nspawn_pid=""
unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -l "${mounted[$i]}" 2>/dev/null || true
    done
    mounted=()
}
cleanup() {
    if [[ -n "$nspawn_pid" ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
        kill "$nspawn_pid" 2>/dev/null || true
        wait "$nspawn_pid" 2>/dev/null || true
    fi
    unmount_all
}

binfmt_for() { # dpkg architecture: registers qemu-user-static's interpreter when missing
    local qemu=$1 f=/usr/share/binfmts/qemu-$1
    [[ -d /proc/sys/fs/binfmt_misc ]] || die "no /proc/sys/fs/binfmt_misc in this kernel"
    [[ -e /proc/sys/fs/binfmt_misc/register ]] ||
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    [[ -e "/proc/sys/fs/binfmt_misc/qemu-$qemu" ]] && return 0
    ensure_packages qemu-user-static
    [[ -f "$f" ]] || die "$f missing (qemu-user-static)"
    local magic mask interpreter
    magic=$(awk '$1 == "magic" {print $2}' "$f")
    mask=$(awk '$1 == "mask" {print $2}' "$f")
    interpreter=$(awk '$1 == "interpreter" {print $2}' "$f")
    # F: the kernel opens the interpreter now, so it works inside the chroot too.
    printf ':qemu-%s:M:0:%s:%s:%s:FP\n' "$qemu" "$magic" "$mask" "$interpreter" >/proc/sys/fs/binfmt_misc/register
    step "registered $interpreter for $qemu binaries (binfmt_misc)"
}

rootfs_checks() {
    [[ $(id -u) -eq 0 ]] || die "--rootfs needs root (debootstrap, chroot, mounts)"
    local host_arch triple
    host_arch=$(dpkg --print-architecture)
    case "$arch" in
    arm64) triple=aarch64-unknown-linux-gnu ;;
    amd64) triple=x86_64-unknown-linux-gnu ;;
    *) die "--arch takes arm64 or amd64" ;;
    esac
    [[ $boot -eq 0 || "$arch" == "$host_arch" ]] ||
        die "--boot needs a root file system of this machine's architecture ($host_arch): systemd's seccomp filters do not work through qemu-user"

    if [[ -z "$executor" ]]; then
        if [[ "$arch" == "$host_arch" ]]; then
            executor="$root/target/release/wasm-executor-wasmtime"
        else
            local candidate
            for candidate in wasm-executor-wasmtime wasm-executor-wamr; do
                if [[ -f "$root/target/cross/$triple/$candidate" ]]; then
                    executor="$root/target/cross/$triple/$candidate"
                    break
                fi
            done
        fi
    fi
    [[ -n "$executor" && -f "$executor" ]] ||
        die "no executor for $arch: build it (make build-aarch64 for arm64) or give --executor PATH"

    if [[ "$arch" != "$host_arch" ]]; then
        case "$arch" in
        arm64) binfmt_for aarch64 ;;
        esac
    fi
    if [[ ! -f "$rootfs/etc/debian_version" ]]; then
        ensure_packages debootstrap
        step "debootstrap bookworm $arch into $rootfs (several minutes; longer through qemu)"
        debootstrap --arch="$arch" --include=ca-certificates,curl bookworm "$rootfs" "$mirror"
    fi
    [[ -x "$rootfs/usr/bin/curl" ]] || chroot "$rootfs" apt-get -q -y install curl </dev/null

    trap cleanup EXIT
    local m
    for m in proc sys dev; do
        if ! mountpoint -q "$rootfs/$m"; then
            case "$m" in
            proc) mount -t proc proc "$rootfs/proc" ;;
            sys) mount -t sysfs sysfs "$rootfs/sys" ;;
            dev) mount --bind /dev "$rootfs/dev" ;;
            esac
            mounted+=("$rootfs/$m")
        fi
    done

    # What the board would get: deploy/pi and openwhisk-patch/conf in the repository's layout,
    # the binary, a test operator key (the private half stays out of DIR), the add action.
    step "staging in $rootfs/root/wasm-pi (executor: $executor, sha256 $(sha256sum <"$executor" | cut -c 1-16))"
    local stage="$rootfs/root/wasm-pi" work
    work=$(mktemp -d)
    rm -rf "$stage"
    mkdir -p "$stage/deploy" "$stage/openwhisk-patch" "$stage/bin" "$stage/keys" "$stage/actions"
    cp -a "$here" "$stage/deploy/pi"
    cp -a "$root/openwhisk-patch/conf" "$stage/openwhisk-patch/conf"
    cp "$executor" "$stage/bin/wasm-executor"
    local probes=() add="$root/actions/dist/add.wasm"
    [[ -f "$add" ]] || die "$add missing: make actions"
    python3 - "$add" "$stage/actions/add.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[2], "w") as z:
    z.write(sys.argv[1], "add.wasm")
PY
    probes+=(/root/wasm-pi/actions/add.zip)
    local key_args=()
    if [[ -x "$root/target/release/wasm-precompile" ]]; then
        "$root/target/release/wasm-precompile" keygen --out "$work/verify-operator" >/dev/null
        cp "$work/verify-operator.pub" "$stage/keys/"
        key_args=(--trusted-key /root/wasm-pi/keys/verify-operator.pub)
        local runtime
        runtime=$(runtime_of "$executor")
        if [[ -n "$runtime" && -x "$root/target/release/wasm-precompile-$runtime" ]]; then
            if "$root/target/release/wasm-precompile" compile --runtime "$runtime" -- "$add" --target "$triple" \
                --sign-key "$work/verify-operator.pem" --zip -o "$stage/actions/add-$runtime-$arch.zip" >"$work/precompile.log" 2>&1; then
                probes+=("/root/wasm-pi/actions/add-$runtime-$arch.zip")
                pass "precompiled add for $runtime on $triple, signed with the test key"
            else
                fail "precompiling add for $runtime on $triple"
                indent <"$work/precompile.log"
            fi
        else
            echo "      (no wasm-precompile-$runtime built: the signed artifact is not tried)"
        fi
    fi
    local ow_args=()
    if [[ -n "$ow_jar" ]]; then
        cp "$ow_jar" "$stage/openwhisk-standalone.jar"
        ow_args=(--openwhisk-jar /root/wasm-pi/openwhisk-standalone.jar)
    fi
    rm -rf "$work"

    local inside=/root/wasm-pi/deploy/pi/verify-inside.sh install=/root/wasm-pi/deploy/pi/install.sh
    local out first second third
    step "install.sh in the chroot ($(chroot "$rootfs" uname -m), board 1g)"
    if out=$(chroot "$rootfs" "$install" --executor /root/wasm-pi/bin/wasm-executor "${key_args[@]}" "${ow_args[@]}" --board 1g 2>&1); then
        pass "install.sh ran: $(printf '%s\n' "$out" | tail -n 1)"
        # its own lines (not apt's)
        printf '%s\n' "$out" | grep '^install.sh:' | indent
    else
        fail "install.sh failed"
        printf '%s\n' "$out" | indent
        return
    fi
    if [[ -n "$java_extra" ]]; then
        # as an operator would: their own line in standalone.env
        sed -i '/^JAVA_EXTRA_OPTS=/d' "$rootfs/etc/openwhisk/standalone.env"
        printf 'JAVA_EXTRA_OPTS=%s\n' "$java_extra" >>"$rootfs/etc/openwhisk/standalone.env"
    fi
    first=$(chroot "$rootfs" "$inside" snapshot)
    out=$(chroot "$rootfs" "$install" --executor /root/wasm-pi/bin/wasm-executor "${key_args[@]}" "${ow_args[@]}" --board 1g 2>&1) || true
    second=$(chroot "$rootfs" "$inside" snapshot)
    if [[ "$out" == *"nothing to change"* && "$first" == "$second" ]]; then
        pass "install.sh again with the same arguments: nothing changed (tree, modes, owners, times, contents)"
    else
        fail "install.sh again changed something"
        printf '%s\n' "$out" | indent
        diff <(printf '%s\n' "$first") <(printf '%s\n' "$second") | indent || true
    fi
    out=$(chroot "$rootfs" "$install" 2>&1) || true
    third=$(chroot "$rootfs" "$inside" snapshot)
    if [[ "$out" == *"sizing: board 1g"* && "$out" == *"nothing to change"* && "$first" == "$third" ]]; then
        pass "install.sh without arguments keeps the installed binary, keys and board: nothing changed"
    else
        fail "install.sh without arguments changed something"
        printf '%s\n' "$out" | indent
        diff <(printf '%s\n' "$first") <(printf '%s\n' "$third") | indent || true
    fi
    local token_mode
    token_mode=$(chroot "$rootfs" stat -c '%a %U:%G' /etc/wasm-executor/token)
    if [[ "$token_mode" == "600 wasm-executor:wasm-executor" ]]; then
        pass "the token is 0600, owned by wasm-executor"
    else
        fail "the token is $token_mode"
    fi

    # The executor as its unit starts it, probed from inside, all in a network namespace of
    # its own (the chroot would share the host's otherwise).
    step "the executor in the chroot, started as wasm-executor.service says"
    local script
    script="set -u; ip link set lo up;
        chroot '$rootfs' '$inside' executor start; s1=\$?;
        chroot '$rootfs' '$inside' probe ${probes[*]}; s2=\$?;
        chroot '$rootfs' /usr/local/sbin/wasm-pi-health; s3=\$?;
        chroot '$rootfs' '$inside' executor stop;
        echo \"inside: start \$s1 probe \$s2 health \$s3\""
    out=$(unshare --net -- bash -c "$script" 2>&1) || true
    printf '%s\n' "$out" | grep -E '^(PASS|FAIL)' || true
    printf '%s\n' "$out" | grep -vE '^(PASS|FAIL)' | indent
    count_inside "$out"
    # Without systemd nothing runs OpenWhisk here: its API is the one problem allowed.
    if [[ "$out" == *"ok    executor accepts the token"* ]] &&
        ! printf '%s\n' "$out" | grep '^BAD' | grep -vq 'OpenWhisk API'; then
        pass "wasm-pi-health in the chroot: the executor and its token are fine"
    else
        fail "wasm-pi-health in the chroot"
    fi

    step "uninstall.sh, then install.sh again"
    local token_before token_after
    token_before=$(sha256sum <"$rootfs/etc/wasm-executor/token")
    out=$(chroot "$rootfs" /root/wasm-pi/deploy/pi/uninstall.sh 2>&1) || true
    if [[ ! -e "$rootfs/usr/local/bin/wasm-executor" && ! -e "$rootfs/usr/local/lib/systemd/system/wasm-executor.service" &&
        -f "$rootfs/etc/wasm-executor/token" && ! -e "$rootfs/etc/systemd/system/multi-user.target.wants/wasm-executor.service" ]]; then
        pass "uninstall.sh removed binary, units and links, kept the token and configuration"
    else
        fail "uninstall.sh"
        printf '%s\n' "$out" | indent
    fi
    out=$(chroot "$rootfs" "$install" --executor /root/wasm-pi/bin/wasm-executor "${key_args[@]}" "${ow_args[@]}" --board 1g 2>&1) || true
    token_after=$(sha256sum <"$rootfs/etc/wasm-executor/token")
    second=$(chroot "$rootfs" "$inside" snapshot)
    if [[ "$token_before" == "$token_after" ]]; then
        pass "install.sh after uninstall.sh kept the token"
    else
        fail "install.sh after uninstall.sh made a new token"
    fi
    out=$(chroot "$rootfs" "$install" 2>&1) || true
    third=$(chroot "$rootfs" "$inside" snapshot)
    if [[ "$out" == *"nothing to change"* && "$second" == "$third" ]]; then
        pass "and once more: nothing changed"
    else
        fail "the reinstallation is not idempotent"
        printf '%s\n' "$out" | indent
    fi

    unmount_all
    [[ $boot -eq 1 ]] || return 0
    boot_checks "${probes[@]}"
}

# The runtime an executor binary was built for, from its /health (it is started on a free
# loopback port with a throwaway state directory); empty when it cannot be run here.
runtime_of() {
    local bin=$1 tmp port pid runtime=""
    tmp=$(mktemp -d)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # (through qemu-user for another architecture, with the root file system's libraries)
    QEMU_LD_PREFIX="$rootfs" "$bin" --listen "127.0.0.1:$port" --state-dir "$tmp/state" >"$tmp/log" 2>&1 &
    pid=$!
    local i
    for ((i = 0; i < 120; i++)); do
        runtime=$(curl -fsS -m 2 "http://127.0.0.1:$port/health" 2>/dev/null | sed -n 's/.*"runtime":"\([a-z-]*\)".*/\1/p') || true
        [[ -n "$runtime" ]] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$tmp"
    case "$runtime" in
    wasmer*) echo wasmer ;;
    *) echo "$runtime" ;;
    esac
}

count_inside() { # adds the PASS and FAIL lines of verify-inside.sh to the totals
    local p f
    p=$(printf '%s\n' "$1" | grep -c '^PASS' || true)
    f=$(printf '%s\n' "$1" | grep -c '^FAIL' || true)
    passed=$((passed + p))
    failed=$((failed + f))
}

boot_checks() {
    ensure_packages systemd-container
    local log leader="" i out
    log=$(mktemp)
    step "booting $rootfs with systemd-nspawn (private network)"
    systemd-nspawn --quiet -D "$rootfs" --boot --register=no --keep-unit --private-network \
        --console=pipe -M wasm-pi-verify "${binds[@]}" </dev/null >"$log" 2>&1 &
    nspawn_pid=$!
    for ((i = 0; i < 60; i++)); do
        leader=$(pgrep -P "$nspawn_pid" | head -n 1 || true)
        [[ -n "$leader" ]] && break
        sleep 1
    done
    [[ -n "$leader" ]] || {
        fail "systemd-nspawn did not start a container"
        indent <"$log"
        return
    }
    local state
    state=$(timeout 300 nsenter -t "$leader" -a systemctl is-system-running --wait 2>&1 || true)
    if [[ "$state" == running ]]; then
        pass "the container's systemd is up: $state"
    else
        fail "the container's systemd is $state"
        nsenter -t "$leader" -a systemctl --failed --no-pager 2>&1 | indent || true
    fi
    out=$(nsenter -t "$leader" -a /root/wasm-pi/deploy/pi/verify-inside.sh services 2>&1) || true
    printf '%s\n' "$out"
    count_inside "$out"
    out=$(nsenter -t "$leader" -a /root/wasm-pi/deploy/pi/verify-inside.sh probe "$@" 2>&1) || true
    printf '%s\n' "$out"
    count_inside "$out"
    if [[ -n "$ow_jar" ]]; then
        out=$(nsenter -t "$leader" -a /root/wasm-pi/deploy/pi/verify-inside.sh openwhisk /root/wasm-pi/actions/add.zip 2>&1) || true
        printf '%s\n' "$out"
        count_inside "$out"
        # the executor's view of the same activation, and the two services' memory afterwards
        nsenter -t "$leader" -a journalctl -u wasm-executor --no-pager -n 5 2>&1 | indent || true
        out=$(nsenter -t "$leader" -a /root/wasm-pi/deploy/pi/verify-inside.sh services 2>&1) || true
        printf '%s\n' "$out" | grep 'memory now' || true
    fi
    out=$(nsenter -t "$leader" -a /usr/local/sbin/wasm-pi-health 2>&1) || true
    printf '%s\n' "$out" | indent
    if [[ "$out" == *"wasm-pi-health: all good"* ]]; then
        pass "wasm-pi-health in the booted system: all good"
    else
        fail "wasm-pi-health in the booted system"
    fi

    # install.sh where systemd runs: nothing to do restarts nothing; another board and a new
    # token restart what uses them, and everything works again afterwards.
    local in_root=(nsenter -t "$leader" -a) install=/root/wasm-pi/deploy/pi/install.sh pids_before pids_after
    main_pids() { "${in_root[@]}" systemctl show -P MainPID wasm-executor.service openwhisk-standalone.service | tr '\n' ' '; }
    pids_before=$(main_pids)
    out=$("${in_root[@]}" "$install" 2>&1) || true
    pids_after=$(main_pids)
    if [[ "$out" == *"nothing to change"* && "$pids_before" == "$pids_after" ]]; then
        pass "install.sh with systemd running and nothing to change: no restart (main pids $pids_after)"
    else
        fail "install.sh with nothing to change (pids $pids_before -> $pids_after)"
        printf '%s\n' "$out" | indent
    fi
    out=$("${in_root[@]}" "$install" --board 4g 2>&1) || true
    local memory_max
    memory_max=$("${in_root[@]}" systemctl show -P MemoryMax wasm-executor.service)
    pids_after=$(main_pids)
    if [[ "$out" == *"restarted wasm-executor.service"* && "$memory_max" == $((1792 << 20)) && "$pids_before" != "$pids_after" ]]; then
        pass "install.sh --board 4g: drop-ins replaced, daemon reloaded, services restarted (executor MemoryMax now $memory_max)"
    else
        fail "install.sh --board 4g (MemoryMax $memory_max, pids $pids_before -> $pids_after)"
        printf '%s\n' "$out" | indent
    fi
    "${in_root[@]}" rm -f /etc/wasm-executor/token
    out=$("${in_root[@]}" "$install" --board 1g 2>&1) || true
    if [[ "$out" == *"generated the invoker's bearer token"* && "$out" == *"restarted openwhisk-standalone.service"* ]]; then
        pass "a new token (the old one removed) and board 1g again: both services restarted"
    else
        fail "token renewal"
        printf '%s\n' "$out" | indent
    fi
    out=$("${in_root[@]}" /root/wasm-pi/deploy/pi/verify-inside.sh probe "$@" 2>&1) || true
    printf '%s\n' "$out"
    count_inside "$out"
    if [[ -n "$ow_jar" ]]; then
        # the restarted server has forgotten the action (in-memory store) and holds the new token
        out=$("${in_root[@]}" /root/wasm-pi/deploy/pi/verify-inside.sh openwhisk /root/wasm-pi/actions/add.zip 2>&1) || true
        printf '%s\n' "$out"
        count_inside "$out"
    fi
    nsenter -t "$leader" -a systemctl poweroff >/dev/null 2>&1 || true
    for ((i = 0; i < 60; i++)); do
        kill -0 "$nspawn_pid" 2>/dev/null || break
        sleep 1
    done
    wait "$nspawn_pid" 2>/dev/null || true
    nspawn_pid=""
    rm -f "$log"
}

quick_checks
if [[ -n "$rootfs" ]]; then
    rootfs_checks
    cleanup
fi
finish

#!/usr/bin/env bash
# Installs or upgrades wasm-executor, and the OpenWhisk standalone server that uses it, as
# systemd services on Raspberry Pi OS / Debian 12 (arm64; also armhf with the 32-bit WAMR build,
# and amd64). Run it as root from a copy of the repository's deploy/pi/ and
# openwhisk-patch/conf/ (same relative layout), on the board itself.
#
#   sudo deploy/pi/install.sh --executor PATH [options]
#
#   --executor PATH        the wasm-executor binary for this board (e.g. the aarch64 build of
#                          `make build-aarch64`); installed as /usr/local/bin/wasm-executor.
#                          Needed the first time; later runs without it keep the installed one
#   --trusted-key FILE     an operator public key (NAME.pub of `wasm-precompile keygen`) whose
#                          signed precompiled artifacts the executor loads; repeatable; kept in
#                          /etc/wasm-executor/keys/ (remove a key there and run install.sh again)
#   --board 1g|4g          sizing of both services (memory limits, JVM, concurrency): 1g for
#                          boards with less than 3 GB of RAM, 4g above. Default: the installed
#                          choice, else from /proc/meminfo
#   --openwhisk-jar PATH   the standalone server built with openwhisk-patch applied
#                          (openwhisk-standalone.jar); installed as /opt/openwhisk/. Without it,
#                          openwhisk-standalone.service is installed but not started
#   --openwhisk-conf DIR   the patch's conf/ (default: ../../openwhisk-patch/conf from here)
#   --no-openwhisk         install the executor only (e.g. for an invoker elsewhere)
#   --no-apt               never call apt-get (Java must then be installed already)
#   --no-start             enable the services but do not (re)start them
#   -h, --help             this text
#
# What it does, each step only when needed (a second run with the same arguments changes
# nothing and says so; it never replaces the token, the keys or the configuration files):
#   users wasm-executor and openwhisk (system users, no login); /etc/wasm-executor/ with the
#   bearer token (generated, 0600, owned by wasm-executor), keys/ and executor.env;
#   /var/lib/wasm-executor (0700); the units in /usr/local/lib/systemd/system/ with the
#   board's drop-ins; /opt/openwhisk/ (jar, the patch's conf), /etc/openwhisk/ (standalone.conf,
#   standalone.env), /var/lib/openwhisk; Java (openjdk-17-jre-headless) when a jar is given
#   and no java is installed; /usr/local/sbin/wasm-pi-health; then enables the services and
#   restarts the ones whose files changed. Without a running systemd (a chroot, an image) the
#   units are enabled and nothing is started.
# Undo with deploy/pi/uninstall.sh. Walk-through: deploy/pi/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# --- where things go ------------------------------------------------------------------------
BIN=/usr/local/bin/wasm-executor
ETC=/etc/wasm-executor
STATE=/var/lib/wasm-executor
UNITS=/usr/local/lib/systemd/system
OW_OPT=/opt/openwhisk
OW_ETC=/etc/openwhisk
OW_STATE=/var/lib/openwhisk
HEALTH=/usr/local/sbin/wasm-pi-health
DOC=/usr/local/share/doc/wasm-pi
EXEC_USER=wasm-executor
OW_USER=openwhisk

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
log() { printf 'install.sh: %s\n' "$*"; }
die() {
    printf 'install.sh: error: %s\n' "$*" >&2
    exit 1
}

# --- arguments ----------------------------------------------------------------------------
executor=""
keys=()
board=""
ow_jar=""
ow_conf="$here/../../openwhisk-patch/conf"
with_openwhisk=1
use_apt=1
start=1
while [[ $# -gt 0 ]]; do
    case "$1" in
    --executor)
        executor="${2:?--executor needs a path}"
        shift
        ;;
    --trusted-key)
        keys+=("${2:?--trusted-key needs a file}")
        shift
        ;;
    --board)
        board="${2:?--board needs 1g or 4g}"
        shift
        ;;
    --openwhisk-jar)
        ow_jar="${2:?--openwhisk-jar needs a path}"
        shift
        ;;
    --openwhisk-conf)
        ow_conf="${2:?--openwhisk-conf needs a directory}"
        shift
        ;;
    --no-openwhisk) with_openwhisk=0 ;;
    --no-apt) use_apt=0 ;;
    --no-start) start=0 ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
[[ -z "$board" || "$board" == 1g || "$board" == 4g ]] || die "--board takes 1g or 4g, not '$board'"
[[ $with_openwhisk -eq 1 || -z "$ow_jar" ]] || die "--openwhisk-jar and --no-openwhisk contradict each other"
[[ $(id -u) -eq 0 ]] || die "run me as root (sudo $0 ...)"
for tool in install cmp od useradd groupadd getent systemctl; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (this script is for Debian 12 / Raspberry Pi OS)"
done

# --- change tracking ------------------------------------------------------------------------
# Every step says what it changed; the services whose files changed are restarted at the end.
changes=0
restart_executor=0
restart_openwhisk=0
units_changed=0
changed() { # what, then what it affects: executor, openwhisk, a unit of either
    #             (executor-unit, openwhisk-unit: systemd reloads too) or none
    log "$1"
    changes=$((changes + 1))
    case "$2" in
    executor) restart_executor=1 ;;
    openwhisk) restart_openwhisk=1 ;;
    executor-unit) restart_executor=1 units_changed=1 ;;
    openwhisk-unit) restart_openwhisk=1 units_changed=1 ;;
    none) ;;
    *) die "internal: changed() with '$2'" ;;
    esac
}

# ensure_dir DIR MODE OWNER GROUP
ensure_dir() {
    local dir=$1 mode=$2 owner=$3 group=$4
    if [[ ! -d "$dir" ]]; then
        install -d -m "$mode" -o "$owner" -g "$group" "$dir"
        changed "created $dir" none
        return
    fi
    fix_attributes "$dir" "$mode" "$owner" "$group"
}

# fix_attributes PATH MODE OWNER GROUP: the mode and owner PATH must have.
fix_attributes() {
    local path=$1 mode=$2 owner=$3 group=$4 have want
    have=$(stat -c '%a %U %G' "$path")
    want="$(printf '%o' "$((8#$mode))") $owner $group"
    if [[ "$have" != "$want" ]]; then
        chmod "$mode" "$path"
        chown "$owner:$group" "$path"
        changed "set $path to mode $mode, owner $owner:$group (was $have)" none
    fi
}

# put_file SRC DEST MODE OWNER GROUP SERVICE: DEST becomes a copy of SRC (a file this
# script owns: replaced when it differs).
put_file() {
    local src=$1 dest=$2 mode=$3 owner=$4 group=$5 service=$6
    [[ -f "$src" ]] || die "missing $src"
    if [[ -f "$dest" ]] && cmp -s "$src" "$dest"; then
        fix_attributes "$dest" "$mode" "$owner" "$group"
        return
    fi
    local verb=installed
    [[ -e "$dest" ]] && verb=updated
    install -D -m "$mode" -o "$owner" -g "$group" "$src" "$dest.new.$$"
    mv -f "$dest.new.$$" "$dest"
    changed "$verb $dest" "$service"
}

# put_text DEST MODE OWNER GROUP SERVICE < text: like put_file, from standard input.
put_text() {
    local tmp
    tmp=$(mktemp)
    cat >"$tmp"
    put_file "$tmp" "$@"
    rm -f "$tmp"
}

# keep_file SRC DEST MODE OWNER GROUP SERVICE: DEST is the operator's once it exists; only
# its mode and owner are corrected.
keep_file() {
    local src=$1 dest=$2 mode=$3 owner=$4 group=$5 service=$6
    if [[ -e "$dest" ]]; then
        fix_attributes "$dest" "$mode" "$owner" "$group"
        return
    fi
    install -D -m "$mode" -o "$owner" -g "$group" "$src" "$dest"
    changed "installed $dest (yours to edit; upgrades keep it)" "$service"
}

# remove_file PATH SERVICE
remove_file() {
    if [[ -e "$1" ]]; then
        rm -f "$1"
        changed "removed $1" "$2"
    fi
}

# ensure_user NAME HOME COMMENT: a system user and its group, no login.
ensure_user() {
    local name=$1 home=$2
    if ! getent group "$name" >/dev/null; then
        groupadd --system "$name"
        changed "created group $name" none
    fi
    if ! getent passwd "$name" >/dev/null; then
        useradd --system --gid "$name" --home-dir "$home" --no-create-home \
            --shell /usr/sbin/nologin --comment "$3" "$name"
        changed "created user $name" none
    fi
}

# The machine type of an ELF file, as dpkg names architectures (amd64, arm64, armhf, ...).
elf_arch() {
    local magic class machine
    magic=$(od -An -tx1 -N4 "$1" | tr -d ' \n')
    [[ "$magic" == 7f454c46 ]] || {
        echo "not-elf"
        return
    }
    class=$(od -An -tu1 -j4 -N1 "$1" | tr -d ' ')
    machine=$(od -An -tu2 -j18 -N2 --endian=little "$1" | tr -d ' ')
    case "$class:$machine" in
    2:62) echo amd64 ;;
    2:183) echo arm64 ;;
    1:40) echo armhf ;;
    1:3) echo i386 ;;
    *) echo "elf-class$class-machine$machine" ;;
    esac
}

# --- the board ------------------------------------------------------------------------------
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
installed_board=""
if [[ -f "$UNITS/wasm-executor.service.d/10-board.conf" ]]; then
    installed_board=$(sed -n 's/^# board: \(1g\|4g\)$/\1/p' "$UNITS/wasm-executor.service.d/10-board.conf")
fi
if [[ -z "$board" ]]; then
    if [[ -n "$installed_board" ]]; then
        board=$installed_board
    elif [[ "$mem_kb" -lt $((3 * 1024 * 1024)) ]]; then
        board=1g
    else
        board=4g
    fi
fi
log "this machine: $arch, $((mem_kb / 1024)) MiB RAM; sizing: board $board"

# --- the executor binary ----------------------------------------------------------------------
if [[ -n "$executor" ]]; then
    [[ -f "$executor" ]] || die "no such file: $executor"
    bin_arch=$(elf_arch "$executor")
    [[ "$bin_arch" == "$arch" ]] ||
        die "$executor is built for $bin_arch, this system runs $arch: copy the build for $arch (make build-aarch64 gives target/cross/aarch64-unknown-linux-gnu/ for arm64, target/cross/armv7-unknown-linux-gnueabihf/ for armhf)"
    version=$("$executor" --version 2>&1) ||
        die "$executor does not run here: $version"
    [[ "$version" == wasm-executor* ]] || die "$executor is not wasm-executor (--version says: $version)"
    put_file "$executor" "$BIN" 0755 root root executor
elif [[ ! -x "$BIN" ]]; then
    die "no executor installed yet: give --executor PATH"
fi

# --- users and directories ----------------------------------------------------------------------
ensure_user "$EXEC_USER" "$STATE" "wasm-executor (OpenWhisk WebAssembly executor)"
ensure_dir "$ETC" 0755 root root
ensure_dir "$ETC/keys" 0755 root root
ensure_dir "$STATE" 0700 "$EXEC_USER" "$EXEC_USER"

# --- the bearer token: generated once, never replaced ------------------------------------------
token="$ETC/token"
if [[ ! -e "$token" ]]; then
    (
        umask 077
        od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$token.new.$$"
        echo >>"$token.new.$$"
    )
    chown "$EXEC_USER:$EXEC_USER" "$token.new.$$"
    chmod 0600 "$token.new.$$"
    mv -f "$token.new.$$" "$token"
    changed "generated the invoker's bearer token $token (0600, $EXEC_USER)" executor
    restart_openwhisk=1
else
    fix_attributes "$token" 0600 "$EXEC_USER" "$EXEC_USER"
    token_text=$(tr -d '[:space:]' <"$token")
    [[ ${#token_text} -ge 16 ]] || die "$token holds fewer than 16 characters: the executor refuses it; remove it and run me again for a new one"
fi

# --- trusted keys: added, never removed here -----------------------------------------------------
for key in "${keys[@]}"; do
    [[ -f "$key" ]] || die "no such key file: $key"
    grep -q -- '-----BEGIN PUBLIC KEY-----' "$key" ||
        die "$key is not a public key in PEM (give the NAME.pub of wasm-precompile keygen)"
    ! grep -q -- 'PRIVATE KEY' "$key" ||
        die "$key holds a private key: it must stay on the build machine; give the .pub file"
    name=$(basename "$key")
    name=${name%.pub}
    name=${name//[^A-Za-z0-9._-]/_}
    put_file "$key" "$ETC/keys/$name.pub" 0644 root root executor
done
listed=()
for key in "$ETC"/keys/*.pub; do
    [[ -f "$key" ]] && listed+=("$key")
done
{
    echo "# Written by deploy/pi/install.sh from $ETC/keys/*.pub: the operator keys whose"
    echo "# signed precompiled artifacts wasm-executor loads. Add or remove keys there and run"
    echo "# install.sh again; this file is rewritten."
    if [[ ${#listed[@]} -gt 0 ]]; then
        (
            IFS=,
            echo "WASM_EXECUTOR_TRUSTED_KEYS=${listed[*]}"
        )
    else
        echo "# (no keys: only portable Wasm runs, precompiled artifacts are refused)"
    fi
} | put_text "$ETC/trusted-keys.env" 0644 root root executor

keep_file "$here/conf/executor.env" "$ETC/executor.env" 0644 root root executor

# --- units ---------------------------------------------------------------------------------------
ensure_dir "$UNITS" 0755 root root
put_file "$here/systemd/wasm-executor.service" "$UNITS/wasm-executor.service" 0644 root root executor-unit
put_file "$here/systemd/board-$board/wasm-executor.conf" "$UNITS/wasm-executor.service.d/10-board.conf" 0644 root root executor-unit
# The loop driver and its devices, for the namespaces' quota filesystems: loaded from boot on
# (and now), the devices in the executor's group (root's use of them is unchanged).
echo loop | put_text /etc/modules-load.d/wasm-executor.conf 0644 root root none
put_text /etc/udev/rules.d/60-wasm-executor-loop.rules 0644 root root none <<'RULES'
# wasm-executor mounts one loop device per namespace with `dir` grants (its quota filesystem).
KERNEL=="loop-control", GROUP="wasm-executor", MODE="0660"
SUBSYSTEM=="block", KERNEL=="loop[0-9]*", GROUP="wasm-executor", MODE="0660"
RULES
modprobe loop 2>/dev/null || log "warning: cannot load the loop module: namespace quotas will refuse \`dir\` grants"
udevadm control --reload 2>/dev/null && udevadm trigger --subsystem-match=block --sysname-match='loop*' --action=change 2>/dev/null ||
    chgrp wasm-executor /dev/loop-control /dev/loop[0-9]* 2>/dev/null || true
put_file "$here/health.sh" "$HEALTH" 0755 root root none
put_file "$here/README.md" "$DOC/README.md" 0644 root root none

# --- OpenWhisk ------------------------------------------------------------------------------------
java_ok=1
if [[ $with_openwhisk -eq 1 ]]; then
    [[ -f "$ow_conf/standalone-wasm.conf" && -f "$ow_conf/standalone-runtimes.json" && -f "$ow_conf/docker-stub.sh" ]] ||
        die "the patch's conf/ is not at $ow_conf (copy openwhisk-patch/conf/ beside deploy/pi/ as in the repository, or give --openwhisk-conf DIR)"
    ensure_user "$OW_USER" "$OW_STATE" "OpenWhisk standalone server"
    ensure_dir "$OW_OPT" 0755 root root
    ensure_dir "$OW_OPT/conf" 0755 root root
    put_file "$ow_conf/standalone-wasm.conf" "$OW_OPT/conf/standalone-wasm.conf" 0644 root root openwhisk
    put_file "$ow_conf/standalone-runtimes.json" "$OW_OPT/conf/standalone-runtimes.json" 0644 root root openwhisk
    put_file "$ow_conf/docker-stub.sh" "$OW_OPT/conf/docker-stub.sh" 0755 root root openwhisk
    ensure_dir "$OW_ETC" 0755 root root
    keep_file "$here/conf/standalone.conf" "$OW_ETC/standalone.conf" 0644 root root openwhisk
    keep_file "$here/conf/standalone.env" "$OW_ETC/standalone.env" 0644 root root openwhisk
    ensure_dir "$OW_STATE" 0750 "$OW_USER" "$OW_USER"
    put_file "$here/systemd/openwhisk-standalone.service" "$UNITS/openwhisk-standalone.service" 0644 root root openwhisk-unit
    put_file "$here/systemd/board-$board/openwhisk-standalone.conf" "$UNITS/openwhisk-standalone.service.d/10-board.conf" 0644 root root openwhisk-unit

    # The standalone server calls `docker` at start and takes the stub only when neither
    # /usr/bin/docker nor /usr/local/bin/docker exists; where one does, the service sees the
    # stub in its place.
    hide=()
    for docker in /usr/bin/docker /usr/local/bin/docker; do
        [[ -e "$docker" ]] && hide+=("BindReadOnlyPaths=$OW_OPT/conf/docker-stub.sh:$docker")
    done
    if [[ ${#hide[@]} -gt 0 ]]; then
        {
            echo "# Written by deploy/pi/install.sh: a docker CLI is installed, so the server would"
            echo "# call it (and fail without a daemon) instead of the stub; inside the service the"
            echo "# stub takes its place."
            echo "[Service]"
            printf '%s\n' "${hide[@]}"
        } | put_text "$UNITS/openwhisk-standalone.service.d/20-docker-stub.conf" 0644 root root openwhisk-unit
    else
        remove_file "$UNITS/openwhisk-standalone.service.d/20-docker-stub.conf" openwhisk-unit
    fi

    if [[ -n "$ow_jar" ]]; then
        [[ -f "$ow_jar" ]] || die "no such file: $ow_jar"
        [[ "$(od -An -tx1 -N4 "$ow_jar" | tr -d ' \n')" == 504b0304 ]] || die "$ow_jar is not a jar"
        grep -aq 'org/apache/openwhisk/standalone/StandaloneOpenWhisk' "$ow_jar" ||
            die "$ow_jar is not OpenWhisk's standalone server (no org.apache.openwhisk.standalone.StandaloneOpenWhisk)"
        grep -aq 'org/apache/openwhisk/core/containerpool/wasm/WasmContainerFactory' "$ow_jar" ||
            log "warning: $ow_jar has no org.apache.openwhisk.core.containerpool.wasm.WasmContainerFactory: build it from a checkout with openwhisk-patch/apply.sh applied, or the server fails at start"
        put_file "$ow_jar" "$OW_OPT/openwhisk-standalone.jar" 0644 root root openwhisk
    fi

    if [[ -f "$OW_OPT/openwhisk-standalone.jar" ]] && ! command -v java >/dev/null 2>&1; then
        if [[ $use_apt -eq 1 ]]; then
            log "installing Java (openjdk-17-jre-headless) for the standalone server"
            export DEBIAN_FRONTEND=noninteractive
            if ! apt-get -q -y --no-install-recommends install openjdk-17-jre-headless </dev/null; then
                apt-get -q update </dev/null
                apt-get -q -y --no-install-recommends install openjdk-17-jre-headless </dev/null ||
                    die "apt-get could not install openjdk-17-jre-headless"
            fi
            changed "installed openjdk-17-jre-headless" openwhisk
        else
            java_ok=0
            log "warning: no java here and --no-apt given: install a JRE 11 or newer (apt-get install openjdk-17-jre-headless), then run me again"
        fi
    fi
    if [[ -x /usr/bin/java ]]; then
        java_version=$(/usr/bin/java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
        [[ "${java_version:-0}" -ge 11 ]] || die "/usr/bin/java is Java ${java_version:-?}: the standalone server needs 11 or newer"
    elif [[ -f "$OW_OPT/openwhisk-standalone.jar" ]]; then
        java_ok=0
        log "warning: no /usr/bin/java (the unit runs that path): install openjdk-17-jre-headless"
    fi
fi

# --- systemd -----------------------------------------------------------------------------------
running=0
[[ -d /run/systemd/system ]] && running=1
if [[ $running -eq 1 && $units_changed -eq 1 ]]; then
    systemctl daemon-reload
fi
services=(wasm-executor.service)
if [[ $with_openwhisk -eq 1 && -f "$OW_OPT/openwhisk-standalone.jar" && $java_ok -eq 1 ]]; then
    services+=(openwhisk-standalone.service)
elif [[ $with_openwhisk -eq 1 ]]; then
    log "openwhisk-standalone.service installed, not enabled: no jar yet (--openwhisk-jar PATH) or no Java"
fi
for unit in "${services[@]}"; do
    if [[ "$(systemctl is-enabled "$unit" 2>/dev/null || true)" != enabled ]]; then
        systemctl enable --quiet "$unit"
        changed "enabled $unit" none
    fi
done
if [[ $running -eq 0 ]]; then
    log "systemd is not running here: nothing started (the services start at boot)"
elif [[ $start -eq 0 ]]; then
    log "--no-start: nothing (re)started"
else
    for unit in "${services[@]}"; do
        again=$restart_executor
        [[ "$unit" == openwhisk-standalone.service ]] && again=$restart_openwhisk
        if ! systemctl is-active --quiet "$unit"; then
            systemctl start "$unit"
            log "started $unit"
        elif [[ $again -eq 1 ]]; then
            systemctl restart "$unit"
            log "restarted $unit (its files changed)"
        fi
    done
fi

if [[ $changes -eq 0 ]]; then
    log "nothing to change: the installation is as asked"
else
    log "$changes change(s) made"
fi
if [[ $running -eq 1 && $start -eq 1 ]]; then
    log "check: wasm-pi-health (journalctl -u wasm-executor -u openwhisk-standalone for the logs)"
fi

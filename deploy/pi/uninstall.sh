#!/usr/bin/env bash
# Removes what deploy/pi/install.sh installed: stops and disables wasm-executor.service and
# openwhisk-standalone.service, removes the units and their drop-ins, the executor binary,
# /opt/openwhisk (the jar and the patch's conf), wasm-pi-health and the README copy.
# Keeps, unless --purge: the configuration and secrets (/etc/wasm-executor with the token and
# keys, /etc/openwhisk), the state (/var/lib/wasm-executor: the compiled-module cache and the
# `dir` grants; /var/lib/openwhisk) and the two system users, so that installing again
# continues where it left off. Java (installed with apt) stays either way.
#
#   sudo deploy/pi/uninstall.sh [--purge]
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
log() { printf 'uninstall.sh: %s\n' "$*"; }
die() {
    printf 'uninstall.sh: error: %s\n' "$*" >&2
    exit 1
}

purge=0
while [[ $# -gt 0 ]]; do
    case "$1" in
    --purge) purge=1 ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) die "unknown argument '$1' (--purge, --help)" ;;
    esac
    shift
done
[[ $(id -u) -eq 0 ]] || die "run me as root (sudo $0)"

UNITS=/usr/local/lib/systemd/system
running=0
[[ -d /run/systemd/system ]] && running=1

for unit in openwhisk-standalone.service wasm-executor.service; do
    if [[ $running -eq 1 ]] && systemctl is-active --quiet "$unit"; then
        systemctl stop "$unit"
        log "stopped $unit"
    fi
    if [[ -f "$UNITS/$unit" ]] && [[ "$(systemctl is-enabled "$unit" 2>/dev/null || true)" == enabled ]]; then
        systemctl disable --quiet "$unit"
        log "disabled $unit"
    fi
done

remove() {
    local path
    for path in "$@"; do
        if [[ -e "$path" || -L "$path" ]]; then
            rm -rf -- "$path"
            log "removed $path"
        fi
    done
}
remove "$UNITS/wasm-executor.service" "$UNITS/wasm-executor.service.d" \
    "$UNITS/openwhisk-standalone.service" "$UNITS/openwhisk-standalone.service.d" \
    /usr/local/bin/wasm-executor /opt/openwhisk /usr/local/sbin/wasm-pi-health \
    /usr/local/share/doc/wasm-pi /etc/modules-load.d/wasm-executor.conf \
    /etc/udev/rules.d/60-wasm-executor-loop.rules
[[ $running -eq 0 ]] || systemctl daemon-reload

if [[ $purge -eq 1 ]]; then
    remove /etc/wasm-executor /etc/openwhisk /var/lib/wasm-executor /var/lib/openwhisk
    for user in openwhisk wasm-executor; do
        if getent passwd "$user" >/dev/null; then
            userdel "$user"
            log "removed user $user"
        fi
        if getent group "$user" >/dev/null; then
            groupdel "$user"
            log "removed group $user"
        fi
    done
else
    log "kept /etc/wasm-executor (token, keys, executor.env), /etc/openwhisk, /var/lib/wasm-executor, /var/lib/openwhisk and the users (--purge removes them)"
fi
if [[ -d /etc/systemd/system/wasm-executor.service.d || -d /etc/systemd/system/openwhisk-standalone.service.d ]]; then
    log "left your own drop-ins in /etc/systemd/system/*.service.d (systemctl edit); remove them by hand if you wish"
fi

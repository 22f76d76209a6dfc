#!/usr/bin/env bash
# Health check of a board set up by deploy/pi/install.sh: the two services, the executor's
# /health and (with its token) /containers, the OpenWhisk API, their memory against their
# limits, and the errors they logged in the last hour. Installed as
# /usr/local/sbin/wasm-pi-health; run it as root (it reads the executor's token).
#
# Usage: wasm-pi-health [--quiet]
#   --quiet   print only problems
# Exit status: 0 when everything answers, 1 when something does not (for cron or a monitor).
# Without systemd running (a chroot), the service checks are skipped and said so.
set -euo pipefail

quiet=0
case "${1:-}" in
"") ;;
--quiet) quiet=1 ;;
-h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
    ;;
*)
    echo "wasm-pi-health: unknown option $1 (--quiet, --help)" >&2
    exit 2
    ;;
esac

problems=0
ok() { [[ $quiet -eq 1 ]] || printf 'ok    %s\n' "$*"; }
bad() {
    printf 'BAD   %s\n' "$*"
    problems=$((problems + 1))
}
info() { [[ $quiet -eq 1 ]] || printf '      %s\n' "$*"; }

# VARIABLE from an environment file (VARIABLE=value, optional quotes); empty when absent.
env_value() {
    local file=$1 name=$2 line value=""
    [[ -r "$file" ]] || return 0
    while IFS= read -r line || [[ -n "$line" ]]; do
        if [[ "$line" == "$name="* ]]; then
            value=${line#"$name="}
            value=${value#[\"\']}
            value=${value%[\"\']}
        fi
    done <"$file"
    printf '%s' "$value"
}

listen=$(env_value /etc/wasm-executor/executor.env WASM_EXECUTOR_LISTEN)
listen=${listen:-127.0.0.1:9000}
port=$(env_value /etc/openwhisk/standalone.env OPENWHISK_PORT)
port=${port:-3233}
token_file=/etc/wasm-executor/token
openwhisk_installed=0
[[ -f /opt/openwhisk/openwhisk-standalone.jar ]] && openwhisk_installed=1

if ! command -v curl >/dev/null 2>&1; then
    echo "wasm-pi-health: curl is needed (apt-get install curl)" >&2
    exit 2
fi

# --- services -----------------------------------------------------------------------------
if [[ -d /run/systemd/system ]]; then
    units=(wasm-executor.service)
    [[ $openwhisk_installed -eq 1 ]] && units+=(openwhisk-standalone.service)
    for unit in "${units[@]}"; do
        state=$(systemctl is-active "$unit" 2>/dev/null || true)
        if [[ "$state" == active ]]; then
            ok "$unit is active"
        else
            bad "$unit is ${state:-unknown} (systemctl status $unit; journalctl -u $unit -b)"
        fi
        current=$(systemctl show -P MemoryCurrent "$unit" 2>/dev/null || true)
        limit=$(systemctl show -P MemoryMax "$unit" 2>/dev/null || true)
        restarts=$(systemctl show -P NRestarts "$unit" 2>/dev/null || true)
        if [[ "$current" =~ ^[0-9]+$ ]]; then
            if [[ "$limit" =~ ^[0-9]+$ ]]; then
                info "memory $((current >> 20)) MiB of $((limit >> 20)) MiB (MemoryMax), restarts since boot: ${restarts:-?}"
            else
                info "memory $((current >> 20)) MiB (no MemoryMax), restarts since boot: ${restarts:-?}"
            fi
        fi
        errors=$(journalctl -q -u "$unit" --since "-1h" -p err --no-pager 2>/dev/null | wc -l || true)
        if [[ "${errors:-0}" -gt 0 ]]; then
            info "$errors error lines in the last hour: journalctl -u $unit --since -1h -p err"
        fi
    done
else
    info "systemd is not running here (a chroot?): service checks skipped"
fi

# --- the executor -------------------------------------------------------------------------
case "$listen" in
unix:*)
    base=http://localhost
    curl_to=(--unix-socket "${listen#unix:}")
    ;;
*)
    base="http://$listen"
    curl_to=()
    ;;
esac
if health=$(curl -fsS -m 5 "${curl_to[@]}" "$base/health" 2>&1); then
    ok "executor $base/health: $health"
else
    bad "executor $base/health does not answer: $health"
fi
if [[ -r "$token_file" ]]; then
    # The token goes to curl on its standard input, never on a command line.
    if containers=$(printf 'header = "Authorization: Bearer %s"\n' "$(tr -d '[:space:]' <"$token_file")" |
        curl -fsS -m 5 "${curl_to[@]}" -K - "$base/containers" 2>&1); then
        count=$(printf '%s' "$containers" | grep -o '"[^"]*"' | grep -vc '^"containers"$' || true)
        ok "executor accepts the token: $count containers"
    else
        bad "executor refuses the token or does not answer /containers: $containers"
    fi
else
    info "$token_file not readable (run as root to check the token)"
fi

# --- OpenWhisk ----------------------------------------------------------------------------
if [[ $openwhisk_installed -eq 1 ]]; then
    if api=$(curl -fsS -m 10 "http://127.0.0.1:$port/api/v1" 2>&1); then
        ok "OpenWhisk API http://127.0.0.1:$port/api/v1 answers"
        info "$(printf '%s' "$api" | head -c 200)"
    else
        bad "OpenWhisk API http://127.0.0.1:$port/api/v1 does not answer (after a (re)start it answers once the JVM is up): $api"
    fi
else
    info "OpenWhisk standalone not installed (/opt/openwhisk/openwhisk-standalone.jar): skipped"
fi

if [[ $problems -gt 0 ]]; then
    echo "wasm-pi-health: $problems problem(s)"
    exit 1
fi
[[ $quiet -eq 1 ]] || echo "wasm-pi-health: all good"

#!/usr/bin/env bash
# The part of `deploy/pi/verify.sh --rootfs DIR` that runs inside the Debian root file system
# (in a chroot, or in the booted container with --boot); not meant to be run on a real board,
# although it only reads there, apart from `executor start|stop`.
#
#   verify-inside.sh snapshot          every file install.sh manages, with mode, owner, size,
#                                      modification time and SHA-256 (for the idempotency diff)
#   verify-inside.sh executor start    starts wasm-executor the way wasm-executor.service does
#                                      (its user, environment files, drop-ins, ExecStart, umask),
#                                      for a chroot where systemd cannot run; waits for /health
#   verify-inside.sh executor stop
#   verify-inside.sh probe [ZIP...]    drives the running executor: /health, a request without
#                                      the token (401), then /init and /run of each ZIP holding
#                                      the `add` action (2 + 3 must give {"result":5})
#   verify-inside.sh services          with systemd running: both units active, their sandbox
#                                      as seen from the processes, the board's limits
#   verify-inside.sh openwhisk ZIP     the OpenWhisk REST API with the standalone guest key:
#                                      create the action from ZIP (kind wasm:0.1), invoke it
#                                      blocking, read the activation's record
# Each check prints PASS or FAIL; the exit status is the number of failures (0: all passed).
set -euo pipefail

UNITS=/usr/local/lib/systemd/system
TOKEN=/etc/wasm-executor/token
PIDFILE=/run/wasm-pi-verify-executor.pid
GUEST_KEY=23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP

failures=0
pass() { printf 'PASS  %s\n' "$*"; }
fail() {
    printf 'FAIL  %s\n' "$*"
    failures=$((failures + 1))
}
say() { printf '      %s\n' "$*"; }

# VALUE of NAME=VALUE lines in an environment file (systemd's syntax as far as these files use
# it: comments, blank lines, optional quotes around the value).
env_file_lines() {
    local line
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
        [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
        local name=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
        if [[ "$value" =~ ^\"(.*)\"$ || "$value" =~ ^\'(.*)\'$ ]]; then
            value=${BASH_REMATCH[1]}
        fi
        printf '%s=%s\n' "$name" "$value"
    done <"$1"
}

# The unit file and its drop-ins in the order systemd reads them.
unit_files() {
    local unit=$1 dropin
    echo "$UNITS/$unit"
    for dropin in $(
        for dir in "$UNITS/$unit.d" "/etc/systemd/system/$unit.d"; do
            [[ -d "$dir" ]] && find "$dir" -maxdepth 1 -name '*.conf' -printf '%f %p\n'
        done | sort | cut -d' ' -f2
    ); do
        echo "$dropin"
    done
}

# The values of KEY= in the unit and its drop-ins, in order.
unit_values() {
    local unit=$1 key=$2 file
    while IFS= read -r file; do
        sed -n "s/^$key=//p" "$file"
    done < <(unit_files "$unit")
}

api() { # curl arguments: the executor's API with the token from standard input, never argv
    printf 'header = "Authorization: Bearer %s"\n' "$(tr -d '[:space:]' <"$TOKEN")" |
        curl -sS -m 120 -K - "$@"
}

listen_address() {
    local listen
    listen=$(env_file_lines /etc/wasm-executor/executor.env | sed -n 's/^WASM_EXECUTOR_LISTEN=//p' | tail -n 1)
    printf '%s' "${listen:-127.0.0.1:9000}"
}

wait_health() { # URL SECONDS
    local i
    for ((i = 0; i < $2; i++)); do
        curl -fsS -m 5 "$1/health" >/dev/null 2>&1 && return 0
        sleep 1
    done
    return 1
}

cmd_snapshot() {
    local paths=(/usr/local/bin/wasm-executor /usr/local/sbin/wasm-pi-health /usr/local/share/doc/wasm-pi
        /usr/local/lib/systemd/system /etc/wasm-executor /etc/openwhisk /opt/openwhisk
        /var/lib/wasm-executor /var/lib/openwhisk /etc/systemd/system/multi-user.target.wants)
    local path
    for path in "${paths[@]}"; do
        [[ -e "$path" ]] || {
            echo "absent $path"
            continue
        }
        find "$path" -printf '%p %y %m %u %g %s %T@\n' | sort
        find "$path" -type f -exec sha256sum {} + | sort -k 2
    done
    getent passwd wasm-executor openwhisk || true
    getent group wasm-executor openwhisk || true
}

cmd_executor() {
    case "${1:-}" in
    start) ;;
    stop)
        if [[ -f "$PIDFILE" ]]; then
            kill "$(cat "$PIDFILE")" 2>/dev/null || true
            rm -f "$PIDFILE"
            echo "stopped the executor"
        fi
        return 0
        ;;
    *)
        echo "usage: verify-inside.sh executor start|stop" >&2
        exit 2
        ;;
    esac
    local unit=wasm-executor.service envs=() line file user group umask_value words=() exec_line
    # Environment= first, then EnvironmentFile= in order: later ones win, as with systemd.
    while IFS= read -r line; do
        [[ -n "$line" ]] || continue
        mapfile -t words < <(printf '%s\n' "$line" | xargs -n 1 printf '%s\n')
        envs+=("${words[@]}")
    done < <(unit_values "$unit" Environment)
    while IFS= read -r file; do
        [[ -n "$file" ]] || continue
        if [[ "$file" == -* ]]; then
            file=${file#-}
            [[ -f "$file" ]] || continue
        fi
        mapfile -t -O "${#envs[@]}" envs < <(env_file_lines "$file")
    done < <(unit_values "$unit" EnvironmentFile)
    user=$(unit_values "$unit" User | tail -n 1)
    group=$(unit_values "$unit" Group | tail -n 1)
    umask_value=$(unit_values "$unit" UMask | tail -n 1)
    exec_line=$(unit_values "$unit" ExecStart | tail -n 1)
    mapfile -t words < <(printf '%s\n' "$exec_line" | xargs -n 1 printf '%s\n')
    say "as $user:$group, umask $umask_value: ${words[*]}"
    say "environment: ${envs[*]}"
    (
        umask "$umask_value"
        exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${envs[@]}" \
            setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs -- "${words[@]}" \
            >>/var/log/wasm-pi-verify-executor.log 2>&1 </dev/null
    ) &
    echo $! >"$PIDFILE"
    local url
    url="http://$(listen_address)"
    if wait_health "$url" 180; then
        pass "the executor started as the unit says answers $url/health"
        say "$(grep 'wasm-executor listening' /var/log/wasm-pi-verify-executor.log | tail -n 1 || true)"
    else
        fail "the executor did not answer $url/health within 180 s; its log:"
        tail -n 20 /var/log/wasm-pi-verify-executor.log | sed 's/^/      /'
    fi
}

cmd_probe() {
    local url health status body zip n=0
    url="http://$(listen_address)"
    if health=$(curl -fsS -m 10 "$url/health"); then
        pass "GET /health: $health"
    else
        fail "GET /health does not answer"
        return
    fi
    status=$(curl -s -o /dev/null -w '%{http_code}' -m 10 "$url/containers")
    if [[ "$status" == 401 ]]; then
        pass "GET /containers without the token: 401"
    else
        fail "GET /containers without the token: $status (expected 401)"
    fi
    for zip in "$@"; do
        n=$((n + 1))
        local id="verify-$n-$$"
        printf '{"value":{"name":"add","main":"main","binary":true,"code":"%s"}}' "$(base64 -w 0 "$zip")" >/tmp/init.json
        body=$(api -X POST -H 'Content-Type: application/json' --data-binary @/tmp/init.json "$url/$id/init")
        if [[ "$body" == *'"ok":true'* ]]; then
            pass "POST /$id/init with $(basename "$zip"): $body"
        else
            fail "POST /$id/init with $(basename "$zip"): $body"
            continue
        fi
        body=$(api -X POST -H 'Content-Type: application/json' \
            -d '{"value":{"param1":2,"param2":3},"activation_id":"verify"}' "$url/$id/run")
        if [[ "$body" == '{"result":5}' ]]; then
            pass "POST /$id/run with 2 + 3: $body"
        else
            fail "POST /$id/run with 2 + 3: $body"
        fi
        body=$(api -X POST "$url/$id/destroy")
        if [[ "$body" == *'"ok":true'* ]]; then pass "POST /$id/destroy"; else fail "POST /$id/destroy: $body"; fi
    done
    rm -f /tmp/init.json
}

cmd_services() {
    local unit pid state
    [[ -d /run/systemd/system ]] || {
        fail "systemd is not running here"
        return
    }
    for unit in wasm-executor.service openwhisk-standalone.service; do
        [[ -f "$UNITS/$unit" ]] || continue
        [[ "$(systemctl is-enabled "$unit" 2>/dev/null || true)" == enabled ]] || continue
        state=$(systemctl is-active "$unit" || true)
        if [[ "$state" != active ]]; then
            fail "$unit is $state"
            systemctl status --no-pager "$unit" | sed 's/^/      /' || true
            continue
        fi
        pass "$unit is active"
        say "$(systemctl show -p User -p MemoryMax -p MemoryHigh -p NoNewPrivileges -p ProtectSystem -p RestrictAddressFamilies "$unit" | tr '\n' ' ')"
        pid=$(systemctl show -P MainPID "$unit")
        if [[ "$pid" -gt 0 ]]; then
            local status
            status=$(tr '\t' ' ' <"/proc/$pid/status")
            if [[ "$status" == *"NoNewPrivs: 1"* ]]; then
                pass "$unit: NoNewPrivs is set on pid $pid"
            else
                fail "$unit: NoNewPrivs not set"
            fi
            if [[ "$status" == *"Seccomp: 2"* ]]; then
                pass "$unit: a seccomp filter is in force"
            else
                fail "$unit: no seccomp filter"
            fi
            # The executor keeps CAP_SYS_ADMIN alone, to mount the namespaces' quota filesystems.
            local caps=0000000000000000 named="no capabilities, none in the bounding set"
            if [[ "$unit" == wasm-executor.service ]]; then
                caps=0000000000200000 named="CAP_SYS_ADMIN alone, effective and bounding"
            fi
            if [[ "$status" == *"CapEff: $caps"* && "$status" == *"CapBnd: $caps"* ]]; then
                pass "$unit: $named"
            else
                fail "$unit: capabilities other than $named"
            fi
            # What the service's mount namespace makes of the file system (as root in it:
            # ProtectSystem= and ProtectHome= hold for root too).
            if nsenter -t "$pid" -m touch /usr/local/verify-write-probe 2>/dev/null; then
                nsenter -t "$pid" -m rm -f /usr/local/verify-write-probe
                fail "$unit: /usr/local is writable in its namespace"
            else
                pass "$unit: /usr/local is read-only in its namespace"
            fi
            if nsenter -t "$pid" -m touch /etc/verify-write-probe 2>/dev/null; then
                nsenter -t "$pid" -m rm -f /etc/verify-write-probe
                fail "$unit: /etc is writable in its namespace"
            else
                pass "$unit: /etc is read-only in its namespace"
            fi
            if nsenter -t "$pid" -m ls /root >/dev/null 2>&1 && [[ -n "$(nsenter -t "$pid" -m ls -A /root)" ]]; then
                fail "$unit: /root is visible in its namespace"
            else
                pass "$unit: /root and /home are hidden in its namespace"
            fi
            local state_dir
            state_dir=$(unit_values "$unit" StateDirectory | tail -n 1)
            if nsenter -t "$pid" -m touch "/var/lib/$state_dir/.verify-write-probe" 2>/dev/null; then
                nsenter -t "$pid" -m rm -f "/var/lib/$state_dir/.verify-write-probe"
                pass "$unit: /var/lib/$state_dir is writable"
            else
                fail "$unit: /var/lib/$state_dir is not writable"
            fi
            local current
            current=$(systemctl show -P MemoryCurrent "$unit")
            if [[ "$current" =~ ^[0-9]+$ ]]; then
                say "memory now: $((current >> 20)) MiB (systemd's MemoryCurrent)"
            else
                say "memory now: $(($(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status") >> 10)) MiB resident (no memory accounting here: MemoryCurrent is $current)"
            fi
        fi
    done
}

cmd_openwhisk() {
    local zip=${1:?verify-inside.sh openwhisk ZIP} port base body i
    port=$(env_file_lines /etc/openwhisk/standalone.env | sed -n 's/^OPENWHISK_PORT=//p' | tail -n 1)
    base="http://127.0.0.1:${port:-3233}/api/v1"
    for ((i = 0; i < 600; i++)); do
        curl -fsS -m 5 "$base" >/dev/null 2>&1 && break
        # a server that keeps failing will not answer: stop waiting after its second restart
        [[ "$(systemctl show -P NRestarts openwhisk-standalone.service 2>/dev/null || echo 0)" -lt 2 ]] || break
        sleep 1
    done
    if ! body=$(curl -fsS -m 10 "$base"); then
        fail "the OpenWhisk API $base does not answer after $i s"
        journalctl -u openwhisk-standalone --no-pager | tail -n 30 | sed 's/^/      /'
        return
    fi
    pass "the OpenWhisk API answers after ${i} s: $(printf '%s' "$body" | head -c 160)"
    printf '{"exec":{"kind":"wasm:0.1","binary":true,"code":"%s"}}' "$(base64 -w 0 "$zip")" >/tmp/action.json
    body=$(curl -sS -m 60 -u "$GUEST_KEY" -X PUT "$base/namespaces/_/actions/add?overwrite=true" \
        -H 'Content-Type: application/json' --data-binary @/tmp/action.json)
    rm -f /tmp/action.json
    if [[ "$body" == *'"kind":"wasm:0.1"'* ]]; then
        pass "created the action add (kind wasm:0.1) through the REST API, as wsk action create does"
        say "limits: $(printf '%s' "$body" | grep -o '"limits":{[^}]*}')"
    else
        fail "creating the action add: $body"
        return
    fi
    body=$(curl -sS -m 120 -u "$GUEST_KEY" -X POST "$base/namespaces/_/actions/add?blocking=true" \
        -H 'Content-Type: application/json' -d '{"param1":2,"param2":3}')
    if [[ "$body" == *'"result":{"result":5}'* && "$body" == *'"status":"success"'* ]]; then
        pass "invoked add blocking, as wsk action invoke --blocking does: result {\"result\":5}, status success"
        say "$(printf '%s' "$body" | grep -o '"activationId":"[^"]*"'), $(printf '%s' "$body" | grep -o '"duration":[0-9]*')"
    else
        fail "invoking add: $body"
    fi
    body=$(curl -sS -m 120 -u "$GUEST_KEY" -X PUT "$base/namespaces/_/actions/add-too-big?overwrite=true" \
        -H 'Content-Type: application/json' -d '{"exec":{"kind":"wasm:0.1","code":"(module)"},"limits":{"memory":4096}}')
    if [[ "$body" == *"exceeds allowed threshold"* ]]; then
        pass "an action asking for 4096 MB is refused by the board's limit: $(printf '%s' "$body" | grep -o '"error":"[^"]*"')"
    else
        fail "an action asking for 4096 MB: $body"
    fi
}

case "${1:-}" in
snapshot) cmd_snapshot ;;
executor)
    shift
    cmd_executor "$@"
    ;;
probe)
    shift
    cmd_probe "$@"
    ;;
services) cmd_services ;;
openwhisk)
    shift
    cmd_openwhisk "$@"
    ;;
*)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 2
    ;;
esac
exit "$failures"

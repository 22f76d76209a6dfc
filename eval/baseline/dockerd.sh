#!/usr/bin/env bash
# A private Docker engine for the evaluation's vanilla Docker baseline, apart from any system
# engine (/var/run/docker.sock is never used or touched).
#
#   eval/baseline/dockerd.sh start|stop|env|status [DIR]
#
# DIR (default <repo>/target/dockerd) holds everything: root/ (images, containers), exec/
# (runtime state), docker.sock, docker.pid, dockerd.log.
#   start   installs Debian's docker.io when dockerd is missing, starts dockerd (which starts
#           its own containerd) detached, waits until `docker info` answers (60 s at most, the
#           log's tail on failure); prints `export DOCKER_HOST=unix://DIR/docker.sock` on
#           stdout. Starting a running engine only prints that line.
#   stop    removes all containers of this engine, stops dockerd (SIGTERM, then SIGKILL after
#           20 s) and its containerd, and unmounts what they left mounted under DIR.
#   env     prints `export DOCKER_HOST=unix://DIR/docker.sock` (use: eval "$(... env)").
#   status  prints whether the engine runs; exit status 0 when it does, 1 when not.
# Needs root. Messages go to stderr; nothing reads standard input.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=../../scripts/common.sh
source "$root/scripts/common.sh"

log() { echo "dockerd.sh: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}
usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

cmd="${1-}"
[[ $# -le 2 ]] || {
    usage >&2
    exit 2
}
dir="$(realpath -m "${2:-$root/target/dockerd}")"
sock="$dir/docker.sock"
pidfile="$dir/docker.pid"
logfile="$dir/dockerd.log"
# The runtime state holds unix sockets (containerd's, at exec/containerd/containerd.sock.ttrpc
# and deeper), whose paths must stay short (108 bytes): a long DIR gets its exec-root under
# /tmp, named after DIR so that start and stop agree.
exec_root="$dir/exec"
if [[ ${#exec_root} -gt 48 ]]; then
    exec_root="/tmp/owdk-$(printf '%s' "$dir" | md5sum | cut -c1-10)"
fi
[[ ${#sock} -lt 100 ]] || die "$sock is too long for a unix socket; choose a shorter DIR"
export DOCKER_HOST="unix://$sock"

# pid of our dockerd, or nothing: the pid file's process, if it is a dockerd on our socket.
dockerd_pid() {
    local pid
    pid="$(cat "$pidfile" 2>/dev/null)" || return 0
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "dockerd .*--host unix://$sock"; then
        echo "$pid"
    fi
}

# pid of the containerd our dockerd started, or nothing (same check on its config path).
containerd_pid() {
    local pid
    pid="$(cat "$exec_root/containerd/containerd.pid" 2>/dev/null)" || return 0
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "containerd .*$exec_root/"; then
        echo "$pid"
    fi
}

answers() { docker info >/dev/null 2>&1; }

# stop_pid PID NAME SECONDS: SIGTERM, wait up to SECONDS, then SIGKILL.
stop_pid() {
    local pid="$1" name="$2" wait="$3" i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < wait * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    log "$name (pid $pid) ignored SIGTERM for ${wait} s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

start() {
    [[ $(id -u) -eq 0 ]] || die "dockerd needs root"
    "$root/scripts/prerequisites.sh" eval
    local pid
    pid="$(dockerd_pid)"
    if [[ -z "$pid" ]]; then
        mkdir -p "$dir/root" "$exec_root"
        rm -f "$sock" "$pidfile" # left by an engine that did not stop cleanly
        log "starting dockerd in $dir (log: $logfile)"
        # Its own session, so that it outlives the shell that started it; no terminal, no stdin.
        setsid dockerd --data-root "$dir/root" --exec-root "$exec_root" \
            --host "unix://$sock" --pidfile "$pidfile" </dev/null >>"$logfile" 2>&1 &
        pid=$!
    fi
    local i
    for ((i = 0; i < 600; i++)); do
        answers && break
        # Alive: the process started (setsid may fork) or the pid file's dockerd.
        if ! kill -0 "$pid" 2>/dev/null && [[ -z "$(dockerd_pid)" ]]; then
            tail -n 30 "$logfile" >&2 || true
            die "dockerd exited during its start"
        fi
        sleep 0.1
    done
    if ! answers; then
        tail -n 30 "$logfile" >&2 || true
        die "dockerd (pid $pid) did not answer within 60 s"
    fi
    pid="$(dockerd_pid)"
    log "dockerd running (pid $pid, server $(docker version --format '{{.Server.Version}}'))"
    echo "export DOCKER_HOST=unix://$sock"
}

stop() {
    local pid cpid
    pid="$(dockerd_pid)"
    if [[ -n "$pid" ]]; then
        if answers; then
            local ids
            ids="$(docker ps --all --quiet)"
            if [[ -n "$ids" ]]; then
                log "removing containers: $(echo "$ids" | tr '\n' ' ')"
                # shellcheck disable=SC2086 # one id per word
                docker rm --force $ids >/dev/null
            fi
        fi
        log "stopping dockerd (pid $pid)"
        stop_pid "$pid" dockerd 20
    else
        log "dockerd is not running in $dir"
    fi
    # dockerd stops its containerd on a clean exit; not after SIGKILL.
    cpid="$(containerd_pid)"
    if [[ -n "$cpid" ]]; then
        log "stopping containerd (pid $cpid)"
        stop_pid "$cpid" containerd 10
    fi
    # dockerd leaves its network namespace bind-mounted under its exec root: unmounted, so that
    # nothing of the engine outlives it and its directory can be removed.
    local mounted
    while read -r mounted; do
        umount "$mounted" 2>/dev/null || log "could not unmount $mounted"
    done < <(awk -v root="$exec_root/" 'index($2, root) == 1 { print $2 }' /proc/self/mounts)
    rm -f "$sock" "$pidfile"
}

status() {
    local pid
    pid="$(dockerd_pid)"
    if [[ -n "$pid" ]] && answers; then
        echo "running: pid $pid, DOCKER_HOST=unix://$sock, $(docker ps --quiet | wc -l) containers running"
    elif [[ -n "$pid" ]]; then
        echo "starting or stuck: pid $pid does not answer on $sock"
        return 1
    else
        echo "not running ($dir)"
        return 1
    fi
}

case "$cmd" in
start) start ;;
stop) stop ;;
env) echo "export DOCKER_HOST=unix://$sock" ;;
status) status ;;
-h | --help) usage ;;
*)
    usage >&2
    exit 2
    ;;
esac

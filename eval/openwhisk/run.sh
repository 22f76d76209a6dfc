#!/usr/bin/env bash
# JMeter load tests against two running OpenWhisk deployments: one whose invoker uses the
# WasmContainerFactory (openwhisk-patch/ + wasm-executor), one with OpenWhisk's own Docker
# container factory. Same workloads, same limits; results side by side. See README.md here.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: eval/openwhisk/run.sh --wasm-api URL --docker-api URL [--docker-host DOCKER_HOST]
                             [--auth UUID:KEY] [--quick] [--out DIR] [--platforms wasm,docker]
                             [--levels cold-1,warm,cold-16,cold-32,mixed,realistic]
                             [--openwhisk-commit TEXT] [--wasm-executor TEXT] [--servers TEXT]
                             [--action echo|hello-js|hello-py] [--offline]
                             [-- -Jname=value ...]

  --wasm-api URL        OpenWhisk API host with the wasm factory (e.g. http://127.0.0.1:3233)
  --docker-api URL      OpenWhisk API host with the Docker factory (e.g. http://127.0.0.1:3243)
  --docker-host H       DOCKER_HOST of the engine the Docker OpenWhisk runs its containers on
                        (default: $DOCKER_HOST); the baseline images are built and tagged there
  --auth UUID:KEY       the namespace key (default: $OW_AUTH, else the standalone guest key)
  --quick               tiny sizes, a smoke test (~4-6 min for both); figures mean nothing
  --out DIR             default eval/results/openwhisk (with --quick: target/openwhisk-quick)
  --platforms LIST      wasm,docker (default both; one alone needs only its API)
  --levels LIST         which levels (default all six, in this order)
  --openwhisk-commit T  recorded in meta.json / summary.md (the servers cannot tell it)
  --wasm-executor T     a description of the executor (binary, flags), recorded likewise
  --servers T           a description of the two servers (build, pool, limits), recorded likewise
  --action NAME         the action of the cold and warm levels: echo (default), or hello-js /
                        hello-py (eval/engines.py's JavaScript and Python actions: on the wasm
                        side the executor's engines, on the Docker side OpenWhisk's own nodejs
                        and python runtime images of eval/baseline/runtimes/build.sh)
  --offline             Maven offline (-o), once ~/.m2 has the JMeter plugin
  after --:             -Jname=value plan properties for every plan (win over the sizes here)

Wasm actions: actions/dist/{echo,hash,net}.wasm packed by actions/pack.sh (portable modules).
Docker actions: eval/baseline/build-images.sh echo hash net, tagged
127.0.0.1:5999/owwasm-baseline/NAME:v1 (an unreachable registry: the invoker's pull fails
at once and, the tag not being "latest", it runs the local image). net actions call a delay server (300 ms) this script
starts on 127.0.0.1 and on the Docker bridge's gateway address.
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
GUEST_KEY="23bc46b1-71f6-4ed5-8c54-816aa4f8c502:123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP"

wasm_api="" docker_api="" docker_host="${DOCKER_HOST:-}" auth="${OW_AUTH:-$GUEST_KEY}"
quick=0 out="" platforms="wasm,docker" levels="cold-1,warm,cold-16,cold-32,mixed,realistic"
ow_commit="unknown (pass --openwhisk-commit)" executor_desc="" servers_desc="" offline=0 jprops=()
action=echo
while [ $# -gt 0 ]; do
    case "$1" in
        --wasm-api) wasm_api="${2:?}"; shift 2 ;;
        --docker-api) docker_api="${2:?}"; shift 2 ;;
        --docker-host) docker_host="${2:?}"; shift 2 ;;
        --auth) auth="${2:?}"; shift 2 ;;
        --quick) quick=1; shift ;;
        --out) out="${2:?}"; shift 2 ;;
        --platforms) platforms="${2:?}"; shift 2 ;;
        --levels) levels="${2:?}"; shift 2 ;;
        --openwhisk-commit) ow_commit="${2:?}"; shift 2 ;;
        --wasm-executor) executor_desc="${2:?}"; shift 2 ;;
        --servers) servers_desc="${2:?}"; shift 2 ;;
        --offline) offline=1; shift ;;
        --action) action="${2:?}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        --) shift
            for a in "$@"; do
                case "$a" in
                    -J?*=*) jprops+=("${a#-J}") ;;
                    *) echo "run.sh: after --, expected -Jname=value, got: $a" >&2; exit 2 ;;
                esac
            done
            break ;;
        *) echo "run.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

die() { echo "run.sh: $*" >&2; exit 1; }
say() { echo "run.sh: $*" >&2; }

IFS=, read -r -a plats <<< "$platforms"
IFS=, read -r -a lvls <<< "$levels"
for p in "${plats[@]}"; do
    case "$p" in
        wasm) [ -n "$wasm_api" ] || { usage >&2; die "--wasm-api is required for platform wasm"; } ;;
        docker) [ -n "$docker_api" ] || { usage >&2; die "--docker-api is required for platform docker"; }
                [ -n "$docker_host" ] || die "--docker-host (or DOCKER_HOST) is required for platform docker" ;;
        *) die "unknown platform '$p' (wasm, docker)" ;;
    esac
done
for l in "${lvls[@]}"; do
    case "$l" in cold-1|warm|cold-16|cold-32|mixed|realistic) ;; *) die "unknown level '$l'" ;; esac
done
case "$auth" in *:*) ;; *) die "--auth must be UUID:KEY" ;; esac

# --- tools ----------------------------------------------------------------------------------
need=(mvn java python3)
[[ ",$platforms," == *,docker,* ]] && need+=(docker go)
for t in "${need[@]}"; do
    command -v "$t" >/dev/null || die "$t not found (Maven, a JDK 17, python3; for docker: docker CLI and Go >= 1.21)"
done

if [ -z "$out" ]; then
    if [ "$quick" = 1 ]; then out="$root/target/openwhisk-quick"; else out="$root/eval/results/openwhisk"; fi
fi
mkdir -p "$out"; out="$(cd "$out" && pwd)"
work="$root/target/openwhisk-eval"
mkdir -p "$work"
tool="$here/owtool.py"

api_of() { if [ "$1" = wasm ]; then echo "$wasm_api"; else echo "$docker_api"; fi; }

# --- the APIs answer, the key is accepted -----------------------------------------------------
declare -A api_info
for p in "${plats[@]}"; do
    api_info[$p]="$(python3 "$tool" check --api "$(api_of "$p")" --auth "$auth")" || die "platform $p: API check failed"
    say "$p: $(api_of "$p") answers: ${api_info[$p]}"
done

# --- the actions ------------------------------------------------------------------------------
zips="$work/zip"
if [[ ",$platforms," == *,wasm,* ]]; then
    "$root/actions/pack.sh" --out "$zips" echo hash net >&2 || die "actions/pack.sh failed"
fi
# The JavaScript and Python actions' sources, beside the zips (both platforms read them).
kinds=(echo hash net)
case "$action" in
    echo) ;;
    hello-js|hello-py)
        kinds+=("$action")
        mkdir -p "$zips"
        python3 - "$zips" "$root/eval" <<'PY' || die "writing the JavaScript and Python sources failed"
import pathlib, sys
sys.path.insert(0, sys.argv[2])
from engines import LANGUAGES
for language, spec in LANGUAGES.items():
    (pathlib.Path(sys.argv[1]) / f"hello-{language}{spec['suffix']}").write_text(spec["source"])
PY
        ;;
    *) die "--action takes echo, hello-js or hello-py, not $action" ;;
esac
image_prefix="127.0.0.1:5999/owwasm-baseline"
# not "latest": for a :latest blackbox image a failed pull fails the activation (DockerContainer.create);
# for any other tag the invoker tolerates it and runs the local image.
image_tag="v1"
bridge_ip=""
engine=""
if [[ ",$platforms," == *,docker,* ]]; then
    export DOCKER_HOST="$docker_host"
    engine="$(docker version --format '{{.Server.Version}}' 2>/dev/null)" ||
        die "no Docker engine at DOCKER_HOST=$docker_host"
    "$root/eval/baseline/build-images.sh" echo hash net >&2 || die "eval/baseline/build-images.sh failed"
    for a in echo hash net; do
        docker tag "owwasm-baseline/$a:latest" "$image_prefix/$a:$image_tag" || die "docker tag $a failed"
    done
    if [[ "$action" == hello-* ]]; then
        runtime="action-$([ "$action" = hello-js ] && echo nodejs || echo python)"
        docker image inspect "owwasm-baseline/$runtime:latest" >/dev/null 2>&1 ||
            die "no image owwasm-baseline/$runtime: build it with eval/baseline/runtimes/build.sh"
        docker tag "owwasm-baseline/$runtime:latest" "$image_prefix/$runtime:$image_tag" || die "docker tag $runtime failed"
    fi
    bridge_ip="$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null)" ||
        die "no bridge network on the Docker engine at $docker_host"
    [ -n "$bridge_ip" ] || die "the Docker engine's bridge network has no gateway address"
fi

# --- the delay server (net actions) ----------------------------------------------------------
delay_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
binds=(--bind 127.0.0.1)
[ -n "$bridge_ip" ] && binds+=(--bind "$bridge_ip")
python3 "$tool" delay-server --port "$delay_port" "${binds[@]}" --delay-ms 300 > "$work/delay.log" 2>&1 &
delay_pid=$!
props_file="$(mktemp "${TMPDIR:-/tmp}/owjm.XXXXXX.properties")"
cleanup() { kill "$delay_pid" 2>/dev/null || true; rm -f "$props_file"; }
trap cleanup EXIT
for _ in $(seq 1 50); do grep -q "delay server on" "$work/delay.log" 2>/dev/null && break; sleep 0.1; done
grep -q "delay server on" "$work/delay.log" || { cat "$work/delay.log" >&2; die "the delay server did not start"; }
net_url_of() { if [ "$1" = wasm ]; then echo "http://127.0.0.1:$delay_port/"; else echo "http://$bridge_ip:$delay_port/"; fi; }

memory_mb=128
# --- probes: create + invoke each kind once on each platform (fails clearly, warms caches) ------
for p in "${plats[@]}"; do
    for k in "${kinds[@]}"; do
        line="$(python3 "$tool" probe --api "$(api_of "$p")" --auth "$auth" --platform "$p" --kind "$k" \
            --code-dir "$zips" --image-prefix "$image_prefix" --image-tag "$image_tag" --memory-mb "$memory_mb" \
            --net-url "$(net_url_of "$p")")" || die "platform $p: probing $k failed (see above)"
        say "probe $p: $line"
    done
done

# --- sizes ------------------------------------------------------------------------------------
# level -> plan and its properties (full | quick)
plan_of() { case "$1" in cold-*) echo ow-cold-start ;; warm) echo ow-warm ;; mixed) echo ow-mixed ;; realistic) echo ow-realistic ;; esac; }
sizes_of() {
    if [ "$quick" = 1 ]; then
        case "$1" in
            cold-1) echo "action=$action clients=1 rounds=3 round_pause_ms=300" ;;
            warm) echo "action=$action threads=1 requests=10 think_ms=0" ;;
            cold-16) echo "action=$action clients=4 rounds=1 round_pause_ms=500" ;;
            cold-32) echo "action=$action clients=6 rounds=1 round_pause_ms=500" ;;
            mixed) echo "max_threads=3 ramp_interval=1 hold=3" ;;
            realistic) echo "threads=4 duration=8 rampup=1 think_ms=100 think_dist=exp hot_share=0.9 rare_count=6" ;;
        esac
    else
        case "$1" in
            cold-1) echo "action=$action clients=1 rounds=10 round_pause_ms=1000" ;;
            warm) echo "action=$action threads=1 requests=50 think_ms=0" ;;
            cold-16) echo "action=$action clients=16 rounds=2 round_pause_ms=5000" ;;
            cold-32) echo "action=$action clients=32 rounds=2 round_pause_ms=5000" ;;
            mixed) echo "max_threads=16 ramp_interval=5 hold=30" ;;
            realistic) echo "threads=16 duration=120 rampup=10 think_ms=500 think_dist=exp hot_share=0.9 rare_count=60" ;;
        esac
    fi
}

mvn_flags=(-B -q)
[ "$offline" = 1 ] && mvn_flags+=(-o)
export CI=true
export MAVEN_OPTS="${MAVEN_OPTS:--Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
auth_b64="$(printf '%s' "$auth" | base64 -w0)"

started_all=$(date +%s)
date_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
declare -A took
status=0
# Levels interleaved (wasm then docker per level), so drifting load on the shared machine hits both.
for l in "${lvls[@]}"; do
    for p in "${plats[@]}"; do
        mkdir -p "$out/$p"
        api="$(api_of "$p")"
        proto="${api%%://*}"; hostport="${api#*://}"; hostport="${hostport%%/*}"
        host="${hostport%:*}"; port="${hostport##*:}"
        [ "$port" != "$hostport" ] || port=$([ "$proto" = https ] && echo 443 || echo 80)
        {
            echo "# written by eval/openwhisk/run.sh: $p $l"
            echo "protocol=$proto"; echo "host=$host"; echo "port=$port"
            echo "auth_b64=$auth_b64"; echo "platform=$p"
            echo "code_dir=$zips"; echo "image_prefix=$image_prefix"; echo "image_tag=$image_tag"
            echo "memory_mb=$memory_mb"; echo "timeout_ms=60000"; echo "net_url=$(net_url_of "$p")"
            for kv in $(sizes_of "$l"); do echo "$kv"; done
            for kv in ${jprops[@]+"${jprops[@]}"}; do printf '%s\n' "$kv"; done
        } > "$props_file"
        plan="$(plan_of "$l")"
        log="$out/$p/$l.mvn.log"
        rm -f "$out/$p/$l.csv" "$out/$p/$l.jmeter.log"
        say "$p $l: $plan ($(sizes_of "$l"))"
        t0=$(date +%s)
        if ! (cd "$here" && mvn "${mvn_flags[@]}" clean verify "-Djm.plan=$plan" "-Djm.props=$props_file") \
                </dev/null >"$log" 2>&1; then
            tail -n 30 "$log" >&2
            die "$p $l: Maven/JMeter failed, see $log"
        fi
        took[$p.$l]=$(( $(date +%s) - t0 ))
        # Maven -q prints nothing but colour codes when all went well
        sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -q '[^[:space:]]' || rm -f "$log"
        csv="$here/target/jmeter/results/$plan.csv"
        [ -f "$here/target/jmeter/logs/$plan.jmx.log" ] && cp "$here/target/jmeter/logs/$plan.jmx.log" "$out/$p/$l.jmeter.log"
        [ -s "$csv" ] || die "$p $l: no result file $csv"
        cp "$csv" "$out/$p/$l.csv"
        # creation must have worked, and at least one activation must have succeeded
        if ! python3 - "$out/$p/$l.csv" "$p $l" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
creates = [r for r in rows if r["label"].startswith("create")]
bad = [r for r in creates if r["success"] != "true"]
runs = [r for r in rows if not r["label"].startswith("create")]
ok = [r for r in runs if r["success"] == "true"]
cold = sum(1 for r in runs if r.get("cold_start") == "true")
if not creates or bad:
    print("run.sh: %s: action creation failed: %d of %d (%s)" % (sys.argv[2], len(bad), len(creates),
          "; ".join("%s %s" % (r["responseCode"], r["responseMessage"]) for r in bad[:3]) or "no create samples"),
          file=sys.stderr)
    sys.exit(1)
if not ok:
    print("run.sh: %s: no successful activation of %d" % (sys.argv[2], len(runs)), file=sys.stderr)
    sys.exit(1)
print("run.sh: %s: %d actions created, %d activations, %d failed, %d cold, %d warm" % (
      sys.argv[2], len(creates), len(runs), len(runs) - len(ok), cold,
      sum(1 for r in runs if r.get("cold_start") == "false")), file=sys.stderr)
PY
        then
            die "$p $l: see $out/$p/$l.csv and $out/$p/$l.jmeter.log"
        fi
    done
done
total=$(( $(date +%s) - started_all ))
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# --- meta + summary ---------------------------------------------------------------------------
python3 - "$out/meta.json" <<PY
import json, os, platform, sys
took = {$(for k in "${!took[@]}"; do printf '"%s": %s, ' "$k" "${took[$k]}"; done)}
cpu = ""
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip(); break
except OSError:
    pass
mem = ""
try:
    mem = "%.1f GB" % (int(open("/proc/meminfo").readline().split()[1]) / 1048576)
except Exception:
    pass
meta = {
    "date": "$date_utc",
    "mode": "quick" if $quick else "full",
    "action": "$action",
    "openwhisk_commit": """$ow_commit""",
    "machine": "%s, %s, %s" % (platform.node(), cpu, platform.platform()),
    "cpus": os.cpu_count(),
    "memory": mem,
    "load_before": "$load_before",
    "load_after": "$load_after",
    "wasm_api": """$wasm_api ${api_info[wasm]:-}""".strip(),
    "docker_api": """$docker_api ${api_info[docker]:-}""".strip(),
    "wasm_executor": """$executor_desc""" or "(not given)",
    "servers": """$servers_desc""" or "(not given)",
    "docker_engine": "$engine (DOCKER_HOST=$docker_host, bridge gateway $bridge_ip)" if "$engine" else "",
    "settings": "action memory $memory_mb MB, timeout 60 s, blocking invokes; cold and warm levels: "
                "$action; wasm: portable modules (zip of actions/dist/*.wasm), hello-js/hello-py as "
                "nodejs:20/python:3 source on the executor's engines; docker: blackbox "
                "$image_prefix/{echo,hash,net}:$image_tag, hello-js/hello-py as source on "
                "$image_prefix/action-{nodejs,python}:$image_tag (OpenWhisk's own runtimes); "
                "net: GET to a 300 ms delay server",
    "seconds_per_plan": took,
    "seconds_total": $total,
}
json.dump(meta, open(sys.argv[1], "w"), indent=2)
PY
python3 "$tool" summarize --results "$out" --platforms "$platforms" >/dev/null || die "summarize failed"
say "done in ${total}s; results: $out (summary.md, summary.json, <platform>/<level>.csv)"
exit $status

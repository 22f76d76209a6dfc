#!/usr/bin/env bash
# Runs the JMeter plans in eval/jmeter/src/test/jmeter through Maven (jmeter-maven-plugin)
# against a running `wasm-bench gateway`, copies the result CSVs to --out and prints one
# summary line per plan. See eval/jmeter/README.md.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: eval/jmeter/run.sh --port PORT [--host H] [--plan cold-start|mixed|realistic|all]
                          [--quick] [--out DIR] [--offline] [--max-error-pct PCT]
                          [-- -Jname=value ... -Djm.name=value ...]

  --port PORT          the gateway's port (required)
  --host H             the gateway's host (default 127.0.0.1)
  --plan P             one plan, or all three in the order cold-start, mixed, realistic (default all)
  --quick              tiny sizes (a few threads, a few seconds each): a smoke test, figures mean nothing
  --out DIR            where the CSVs, JMeter logs, summary.txt and each plan's
                       provenance.json (when, at which commit, on what machine) go
                       (default: eval/results/jmeter, with --quick target/jmeter-quick)
  --offline            run Maven offline (-o); needs one earlier run that resolved everything
  --max-error-pct PCT  fail when a plan's share of failed requests is above PCT
                       (always: fail when a plan has no successful request)
  after --:            -Jname=value    a JMeter property for the plans (wins over everything else)
                       -Dname=value    handed to Maven as is, e.g. -Djm.heap.mb=512
EOF
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

host=127.0.0.1
port=""
plan=all
quick=0
out=""
offline=0
max_err=""
jprops=()
mvn_extra=()

while [ $# -gt 0 ]; do
    case "$1" in
        --port) port="${2:?--port needs a value}"; shift 2 ;;
        --port=*) port="${1#*=}"; shift ;;
        --host) host="${2:?--host needs a value}"; shift 2 ;;
        --host=*) host="${1#*=}"; shift ;;
        --plan) plan="${2:?--plan needs a value}"; shift 2 ;;
        --plan=*) plan="${1#*=}"; shift ;;
        --quick) quick=1; shift ;;
        --out) out="${2:?--out needs a value}"; shift 2 ;;
        --out=*) out="${1#*=}"; shift ;;
        --offline) offline=1; shift ;;
        --max-error-pct) max_err="${2:?--max-error-pct needs a value}"; shift 2 ;;
        --max-error-pct=*) max_err="${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift
            for a in "$@"; do
                case "$a" in
                    -J?*=*) jprops+=("${a#-J}") ;;
                    -D?*) mvn_extra+=("$a") ;;
                    *) echo "run.sh: after --, expected -Jname=value or -Dname=value, got: $a" >&2; exit 2 ;;
                esac
            done
            break ;;
        *) echo "run.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

[ -n "$port" ] || { echo "run.sh: --port is required" >&2; usage >&2; exit 2; }
case "$port" in *[!0-9]*) echo "run.sh: --port must be a number" >&2; exit 2 ;; esac
case "$plan" in
    all) plans=(cold-start mixed realistic) ;;
    cold-start|mixed|realistic) plans=("$plan") ;;
    *) echo "run.sh: --plan must be cold-start, mixed, realistic or all" >&2; exit 2 ;;
esac
for tool in mvn java python3; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install maven openjdk-17-jdk-headless python3)" >&2; exit 2; }
done
if [ -z "$out" ]; then
    if [ "$quick" = 1 ]; then out="$root/target/jmeter-quick"; else out="$root/eval/results/jmeter"; fi
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# Sizes. Full sizes are pom.xml's defaults; --quick overrides them (a -D after -- still wins).
sizes=()
if [ "$quick" = 1 ]; then
    sizes=(-Djm.clients=4 -Djm.rounds=2 -Djm.round_pause_ms=300
           -Djm.max_threads=3 -Djm.ramp_interval=1 -Djm.hold=2
           -Djm.threads=4 -Djm.duration=5 -Djm.rampup=1 -Djm.think_ms=50
           -Djm.heap.mb=128)
fi

# -J properties after --: a properties file JMeter reads last (-q), so they win.
extra="$(mktemp "${TMPDIR:-/tmp}/jmeter-extra.XXXXXX.properties")"
trap 'rm -f "$extra"' EXIT
{
    echo "# written by eval/jmeter/run.sh"
    for p in ${jprops[@]+"${jprops[@]}"}; do printf '%s\n' "$p"; done
} > "$extra"

# Is the gateway there? (GET /health, 10 s at most)
if ! python3 - "$host" "$port" <<'EOF'
import sys, time, urllib.request
url = "http://%s:%s/health" % (sys.argv[1], sys.argv[2])
deadline = time.time() + 10
while True:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception as e:
        err = e
    if time.time() > deadline:
        print("run.sh: no gateway at %s (%s)" % (url, err), file=sys.stderr)
        sys.exit(1)
    time.sleep(0.5)
EOF
then
    exit 1
fi

mvn_flags=(-B -q)
[ "$offline" = 1 ] && mvn_flags+=(-o)
export CI=true
export MAVEN_OPTS="${MAVEN_OPTS:--Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"

status=0
for p in "${plans[@]}"; do
    log="$out/$p.mvn.log"
    rm -f "$out/$p.csv" "$out/$p.jmeter.log"
    started=$(date +%s)
    started_utc=$(date -u +%FT%TZ)
    load_start=$(cat /proc/loadavg)
    # clean: the plugin lays out a fresh JMeter tree under target/ on every run and appends to
    # an existing result file, so each plan starts from an empty target/.
    if ! (cd "$here" && mvn "${mvn_flags[@]}" clean verify \
            "-Djm.plan=$p" "-Djm.host=$host" "-Djm.port=$port" "-Djm.extraProperties=$extra" \
            ${sizes[@]+"${sizes[@]}"} ${mvn_extra[@]+"${mvn_extra[@]}"}) </dev/null >"$log" 2>&1; then
        echo "run.sh: $p: Maven failed, see $log:" >&2
        tail -n 30 "$log" >&2
        status=1
        continue
    fi
    took=$(( $(date +%s) - started ))
    csv="$here/target/jmeter/results/$p.csv"
    [ -f "$here/target/jmeter/logs/$p.jmx.log" ] && cp "$here/target/jmeter/logs/$p.jmx.log" "$out/$p.jmeter.log"
    if [ ! -s "$csv" ]; then
        echo "run.sh: $p: no result file $csv" >&2
        status=1
        continue
    fi
    cp "$csv" "$out/$p.csv"
    sum_args=("$out/$p.csv")
    [ -n "$max_err" ] && sum_args+=(--max-error-pct "$max_err")
    if line="$(python3 "$here/summarize.py" "${sum_args[@]}")"; then :; else status=1; fi
    printf '%s  (%ds with Maven)\n' "$line" "$took" | tee "$out/$p.summary.txt"
    python3 "$here/provenance.py" "$started_utc" "$load_start" >"$out/$p.provenance.json"
done
# summary.txt: every plan run into this directory so far (plans may be run one at a time).
cat "$out"/*.summary.txt > "$out/summary.txt" 2>/dev/null || true
echo "results: $out" >&2
exit $status

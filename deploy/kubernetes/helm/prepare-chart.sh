#!/usr/bin/env bash
# Prepares a checkout of OpenWhisk's Helm chart (openwhisk-deploy-kube) for invokers that run
# actions in a wasm-executor: writes runtimes-wasm.json into the chart directory, where the
# chart reads its runtimes manifest from (.Files.Get .Values.whisk.runtimes; values-wasm.yaml
# names this file). Nothing of the chart is changed; the sidecar comes from post-render.sh.
#
# Usage: prepare-chart.sh <openwhisk-deploy-kube checkout | its helm/openwhisk directory>
#
# runtimes-wasm.json is the chart's runtimes.json with
#   - the wasm:0.1 kind of openwhisk-patch/conf/runtimes-wasm.json added;
#   - every "stemCells" entry removed: prewarmed containers would reserve pool memory for
#     kinds these invokers cannot run (a Wasm container is created by its /init anyway);
#   - the other kinds kept: the controller accepts their actions (the chart's package jobs
#     create some), and OpenWhisk's invoker health check invokes a nodejs:default action. On
#     these invokers such actions fail at /init as an action developer error, which OpenWhisk
#     counts as a healthy invoker; without nodejs:default no invoker ever becomes healthy.
# Running it again rewrites the same file.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fragment="$here/../../../openwhisk-patch/conf/runtimes-wasm.json"

die() { echo "prepare-chart.sh: $*" >&2; exit 1; }

[[ $# -eq 1 ]] || die "usage: prepare-chart.sh <openwhisk-deploy-kube checkout | helm/openwhisk>"
[[ -d "$1" ]] || die "no such directory: $1"
chart="$(cd "$1" && pwd)"
[[ -f "$chart/Chart.yaml" ]] || chart="$chart/helm/openwhisk"
[[ -f "$fragment" ]] || die "missing $fragment (run it from this repository)"

# --- recognise the chart ---------------------------------------------------------------------
[[ -f "$chart/Chart.yaml" ]] || die "$1 holds no Helm chart (no Chart.yaml, nor helm/openwhisk/Chart.yaml)"
grep -Eq '^name:[[:space:]]*"?openwhisk"?[[:space:]]*$' "$chart/Chart.yaml" ||
    die "$chart/Chart.yaml is not OpenWhisk's chart (name: openwhisk)"
pod="$chart/templates/invoker-pod.yaml"
need() { # file, extended regex, what it means
    grep -Eq -- "$2" "$1" || die "$chart is not a chart version this was written for: ${1#"$chart"/} lacks $3"
}
need "$pod" 'kind: StatefulSet' "a StatefulSet invoker (containerFactory.impl=kubernetes)"
need "$pod" 'name: \{\{ \.Release\.Name \}\}-invoker' "the invoker named <release>-invoker (the patch selects it by name)"
need "$pod" '^[[:space:]]*- name: "?invoker"?[[:space:]]*$' "a container named invoker (the patch merges into it)"
helpers="$(cat "$chart"/templates/*.tpl 2>/dev/null)"
grep -q 'Files.Get .Values.whisk.runtimes' <<<"$helpers" ||
    die "$chart does not read its runtimes manifest from .Values.whisk.runtimes"
[[ -f "$chart/runtimes.json" ]] || die "$chart has no runtimes.json"

# --- runtimes-wasm.json ----------------------------------------------------------------------
python3 - "$chart/runtimes.json" "$fragment" "$chart/runtimes-wasm.json" <<'PY'
import json, sys

source, fragment_path, target = sys.argv[1:]
manifest = json.load(open(source, encoding="utf-8"))
fragment = json.load(open(fragment_path, encoding="utf-8"))
runtimes = manifest.get("runtimes")
if not isinstance(runtimes, dict):
    sys.exit(f"prepare-chart.sh: {source} has no \"runtimes\" object")
if "wasm" in runtimes and runtimes["wasm"] != fragment["wasm"]:
    sys.exit(f"prepare-chart.sh: {source} already declares another \"wasm\" family; not replacing it")
dropped = 0
for family in runtimes.values():
    for kind in family:
        if kind.pop("stemCells", None) is not None:
            dropped += 1
runtimes["wasm"] = fragment["wasm"]
defaults = [k["kind"] for k in runtimes.get("nodejs", []) if k.get("default")]
if not defaults:
    sys.exit(f"prepare-chart.sh: {source} has no default nodejs kind: OpenWhisk's invoker health "
             "check needs nodejs:default, or no invoker ever becomes healthy")
text = json.dumps(manifest, indent=4) + "\n"
json.loads(text)
with open(target, "w", encoding="utf-8") as out:
    out.write(text)
kinds = sum(len(f) for f in runtimes.values())
print(f"runtimes-wasm.json -> {target}: {kinds} kinds (wasm:0.1 added, nodejs:default is "
      f"{defaults[0]}), {dropped} stemCells entries removed")
PY

cat <<EOF
done. Deploy with (from this repository; your own values first):
  helm upgrade --install owdev $chart -n openwhisk --create-namespace -f <your values> \\
      -f $here/values-wasm.yaml --post-renderer $here/post-render.sh
EOF

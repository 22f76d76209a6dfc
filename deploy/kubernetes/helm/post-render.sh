#!/usr/bin/env bash
# Helm post-renderer: adds the wasm-executor sidecar to the invoker StatefulSet in what Helm
# rendered from OpenWhisk's chart, with Kustomize and the component in
# ../kustomize/wasm-executor/. Helm pipes the manifests in and applies what comes out:
#
#   helm upgrade --install owdev <chart> -n openwhisk -f values.yaml \
#       -f deploy/kubernetes/helm/values-wasm.yaml \
#       --post-renderer deploy/kubernetes/helm/post-render.sh
#
# Give it on every `helm upgrade` (Helm does not remember a post-renderer).
#
# Environment:
#   WASM_EXECUTOR_IMAGE      the executor image, e.g. registry.example.com/wasm-executor:0.1.0
#                            (default: what the component says, wasm-executor:0.1.0)
#   WASM_EXECUTOR_COMPONENT  a Kustomize component directory to use instead of
#                            ../kustomize/wasm-executor (your copy with your settings)
#   KUSTOMIZE                the command that builds a kustomization directory (default:
#                            `kustomize build` if kustomize is installed, else `kubectl kustomize`)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
component="${WASM_EXECUTOR_COMPONENT:-$here/../kustomize/wasm-executor}"

die() { echo "post-render.sh: $*" >&2; exit 1; }

[[ -f "$component/kustomization.yaml" ]] || die "no kustomization.yaml in $component"

if [[ -n "${KUSTOMIZE:-}" ]]; then
    read -r -a kustomize <<<"$KUSTOMIZE"
elif command -v kustomize >/dev/null 2>&1; then
    kustomize=(kustomize build)
elif command -v kubectl >/dev/null 2>&1; then
    kustomize=(kubectl kustomize)
else
    die "needs kustomize or kubectl on PATH (or KUSTOMIZE)"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat >"$work/helm-output.yaml"
[[ -s "$work/helm-output.yaml" ]] || die "Helm rendered nothing"
# Kustomize loads components only from below the kustomization's directory.
cp -R "$component" "$work/wasm-executor"

{
    echo "apiVersion: kustomize.config.k8s.io/v1beta1"
    echo "kind: Kustomization"
    echo "resources:"
    echo "  - helm-output.yaml"
    echo "components:"
    echo "  - wasm-executor"
    if [[ -n "${WASM_EXECUTOR_IMAGE:-}" ]]; then
        image="$WASM_EXECUTOR_IMAGE"
        echo "images:"
        echo "  - name: wasm-executor"
        if [[ "$image" == *@* ]]; then
            echo "    newName: \"${image%@*}\""
            echo "    digest: \"${image#*@}\""
        elif [[ "${image##*/}" == *:* ]]; then
            echo "    newName: \"${image%:*}\""
            echo "    newTag: \"${image##*:}\""
        else
            echo "    newName: \"$image\""
        fi
    fi
} >"$work/kustomization.yaml"

"${kustomize[@]}" "$work" >"$work/out.yaml"

# The patch selects the invoker by kind and name; if nothing matched (the chart rendered a
# DaemonSet because invoker.containerFactory.impl is "docker", or the release has no invoker),
# Kustomize succeeds silently. Refuse rather than deploy invokers without their executor.
grep -q 'CONFIG_whisk_wasmExecutor_url' "$work/out.yaml" ||
    die "no StatefulSet named <release>-invoker in Helm's output to add the wasm-executor to: set invoker.containerFactory.impl=kubernetes (values-wasm.yaml does)"
cat "$work/out.yaml"

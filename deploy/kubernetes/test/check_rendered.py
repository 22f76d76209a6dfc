#!/usr/bin/env python3
"""Checks what the deployment must guarantee in rendered manifests (the output of the Kustomize
component, alone or as Helm's post-renderer): the invoker talks to the executor over the pod's
loopback with the token, the executor runs locked down with its state on an emptyDir, probes
/health, and has resource requests and a memory limit that covers the guests OpenWhisk may run.

Usage: check_rendered.py MANIFESTS.yaml [--image IMAGE] [--user-memory 2048m]
Exit status 1 with one line per violation.
"""
import argparse
import json
import re
import sys

import yaml

FACTORY = "org.apache.openwhisk.core.containerpool.wasm.WasmContainerFactoryProvider"
LOG_STORE = "org.apache.openwhisk.core.containerpool.logging.DockerToActivationLogStoreProvider"
TOKEN_DIR = "/var/run/secrets/wasm-executor"
STATE_MOUNT = "/var/lib/wasm-executor"
UNITS = {"": 1, "k": 1000, "M": 1000**2, "G": 1000**3, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "m": 0.001}


def quantity(text):
    """Bytes (or cores) of a Kubernetes quantity such as 256Mi, 2G or 500m."""
    match = re.fullmatch(r"([0-9.]+)(Ki|Mi|Gi|k|M|G|m)?", str(text))
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    return float(match.group(1)) * UNITS[match.group(2) or ""]


def openwhisk_memory(text):
    """Bytes of an OpenWhisk memory size such as 2048m or 4 g (m = MiB in OpenWhisk)."""
    match = re.fullmatch(r"\s*([0-9]+)\s*([mMgG])[bB]?\s*", text)
    if not match:
        raise ValueError(f"not an OpenWhisk memory size: {text!r}")
    return int(match.group(1)) * (1024**2 if match.group(2) in "mM" else 1024**3)


def env_map(container):
    return {e["name"]: e for e in container.get("env", [])}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("manifests")
    parser.add_argument("--image", help="the executor image the manifests must use")
    parser.add_argument("--user-memory", default=None,
                        help="whisk.containerPool.userMemory (default: the invoker's CONFIG_ value)")
    args = parser.parse_args()

    problems = []

    def check(ok, what):
        if not ok:
            problems.append(what)
        return ok

    docs = [d for d in yaml.safe_load_all(open(args.manifests, encoding="utf-8")) if d]
    invokers = [d for d in docs if d.get("kind") == "StatefulSet" and d["metadata"]["name"].endswith("-invoker")]
    if not check(len(invokers) == 1, f"expected one <release>-invoker StatefulSet, found {len(invokers)}"):
        return report(problems)
    pod = invokers[0]["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    if not check({"invoker", "wasm-executor"} <= set(containers),
                 f"containers are {sorted(containers)}, not invoker + wasm-executor"):
        return report(problems)
    invoker, executor = containers["invoker"], containers["wasm-executor"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}

    # --- the invoker side: SPI and the executor's address through OpenWhisk's CONFIG_ variables.
    ienv = env_map(invoker)
    for name, value in [("CONFIG_whisk_spi_ContainerFactoryProvider", FACTORY),
                        ("CONFIG_whisk_spi_LogStoreProvider", LOG_STORE),
                        ("CONFIG_whisk_wasmExecutor_url", "http://127.0.0.1:9000"),
                        ("CONFIG_whisk_wasmExecutor_authTokenFile", f"{TOKEN_DIR}/token")]:
        check(ienv.get(name, {}).get("value") == value, f"invoker env {name} is not {value}")
    check(any(m["mountPath"] == TOKEN_DIR and m.get("readOnly") for m in invoker.get("volumeMounts", [])),
          f"invoker does not mount the token read-only at {TOKEN_DIR}")
    check(pod.get("automountServiceAccountToken") is False, "the pod mounts a service-account token")

    # --- the token: one Secret, readable by group 65532 (fsGroup), by nobody else.
    secret = volumes.get("wasm-executor-token", {}).get("secret", {})
    check(secret.get("secretName") == "wasm-executor-token", "no volume of Secret wasm-executor-token")
    check(secret.get("defaultMode") is not None and secret["defaultMode"] & 0o007 == 0,
          "the token file would be readable by every user (the executor refuses it)")
    check(pod.get("securityContext", {}).get("fsGroup") == 65532, "pod fsGroup is not 65532")

    # --- the executor container.
    if args.image:
        check(executor.get("image") == args.image, f"executor image is {executor.get('image')}, not {args.image}")
    xenv = env_map(executor)
    listen = xenv.get("WASM_EXECUTOR_LISTEN", {}).get("value", "")
    check(listen.endswith(":9000"), f"executor listens on {listen!r}, not port 9000 (the invoker's URL)")
    check(xenv.get("WASM_EXECUTOR_AUTH_TOKEN_FILE", {}).get("value") == f"{TOKEN_DIR}/token",
          "executor has no --auth-token-file (required beyond loopback)")
    check(xenv.get("WASM_EXECUTOR_ALLOWED_HOSTS", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
          == "status.podIP", "WASM_EXECUTOR_ALLOWED_HOSTS is not the pod IP")
    state = xenv.get("WASM_EXECUTOR_STATE_DIR", {}).get("value", "")
    check(state.startswith(STATE_MOUNT + "/"),
          f"state directory {state!r} is not a subdirectory of the emptyDir at {STATE_MOUNT}")
    mounts = {m["mountPath"]: m for m in executor.get("volumeMounts", [])}
    check(mounts.get(STATE_MOUNT, {}).get("name") in volumes
          and "emptyDir" in volumes.get(mounts.get(STATE_MOUNT, {}).get("name"), {}),
          f"{STATE_MOUNT} is not an emptyDir")
    check(mounts.get(TOKEN_DIR, {}).get("readOnly") is True, "executor does not mount the token read-only")
    sc = executor.get("securityContext", {})
    for key, want in [("runAsNonRoot", True), ("readOnlyRootFilesystem", True), ("allowPrivilegeEscalation", False)]:
        check(sc.get(key) is want, f"executor securityContext.{key} is not {want}")
    check(sc.get("capabilities", {}).get("drop") == ["ALL"], "executor does not drop ALL capabilities")
    check(sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "executor seccomp profile is not RuntimeDefault")
    check(isinstance(sc.get("runAsUser"), int) and sc["runAsUser"] != 0, "executor runAsUser is not a non-root uid")
    for probe in ("readinessProbe", "livenessProbe"):
        get = executor.get(probe, {}).get("httpGet", {})
        check(get.get("path") == "/health", f"executor {probe} is not GET /health")
    ports = {p.get("name"): p.get("containerPort") for p in executor.get("ports", [])}
    check(all(executor.get(p, {}).get("httpGet", {}).get("port") in (9000, "wasm-executor")
              for p in ("readinessProbe", "livenessProbe")) and ports.get("wasm-executor") == 9000,
          "probes do not reach port 9000")

    # --- resources: requests set; the memory limit covers idle + warm containers + every guest
    # OpenWhisk may run at once (userMemory, concurrency 1).
    res = executor.get("resources", {})
    for key in ("cpu", "memory"):
        check(key in res.get("requests", {}), f"executor has no {key} request")
    limit = res.get("limits", {}).get("memory")
    if check(limit is not None, "executor has no memory limit"):
        user_memory = args.user_memory or ienv.get("CONFIG_whisk_containerPool_userMemory", {}).get("value")
        if check(user_memory is not None, "cannot tell whisk.containerPool.userMemory"):
            need = 80 * 1024**2 + openwhisk_memory(user_memory)
            check(quantity(limit) >= need,
                  f"executor memory limit {limit} is below 80 MiB + userMemory {user_memory}")
        check(quantity(res["requests"]["memory"]) <= quantity(limit), "memory request above the limit")

    # --- the executor's settings come from the generated ConfigMap.
    refs = [e["configMapRef"]["name"] for e in executor.get("envFrom", []) if "configMapRef" in e]
    maps = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ConfigMap"}
    if check(len(refs) == 1 and refs[0] in maps, f"executor envFrom {refs} names no ConfigMap in the output"):
        data = maps[refs[0]].get("data", {})
        for key in ("WASM_EXECUTOR_MAX_CONTAINERS", "WASM_EXECUTOR_MAX_CONCURRENT", "WASM_EXECUTOR_MAX_MEMORY_MB"):
            check(key in data, f"ConfigMap {refs[0]} lacks {key}")

    # --- the runtimes manifest (when rendered by the chart): wasm:0.1 and nodejs:default.
    manifest = ienv.get("RUNTIMES_MANIFEST", {}).get("value")
    if manifest:
        runtimes = json.loads(manifest).get("runtimes", {})
        check(any(k.get("kind") == "wasm:0.1" for k in runtimes.get("wasm", [])), "RUNTIMES_MANIFEST lacks wasm:0.1")

    return report(problems)


def report(problems):
    for p in problems:
        print(f"check_rendered: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

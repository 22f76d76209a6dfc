#!/usr/bin/env bash
# Licensed to the Apache Software Foundation (ASF) under one or more contributor
# license agreements; and to You under the Apache License, Version 2.0.
#
# Puts the wasm-executor patch into an OpenWhisk checkout:
#   - the WasmContainerFactory/WasmContainer adapter and the executor client into
#     core/invoker/src/main/scala/org/apache/openwhisk/core/containerpool/wasm/
#   - standalone-wasm.conf into core/standalone/src/main/resources/
#   - the wasm:0.1 kind into ansible/files/runtimes.json (which the standalone jar embeds)
#   - upstream/fpc-pass-action.patch into FunctionPullingContainerProxy.scala (the scheduler
#     path then passes the action to the factory and to initialize, as ContainerProxy does)
#
# Usage: apply.sh <openwhisk-checkout>
# Running it again is harmless: files are replaced by the same content and the kind is only
# added once. It refuses a directory that is not an OpenWhisk checkout it was written for
# (OpenWhisk master with Pekko; see README.md for the 1.0.0 release).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"

die() { echo "apply.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: apply.sh <openwhisk-checkout>"
command -v patch >/dev/null || die "patch(1) is not installed (apt-get install patch)"
ow="$(cd "$1" 2>/dev/null && pwd)" || die "no such directory: $1"

# --- recognise the checkout ------------------------------------------------------------
spi="$ow/common/scala/src/main/scala/org/apache/openwhisk/core/containerpool/ContainerFactory.scala"
container="$ow/common/scala/src/main/scala/org/apache/openwhisk/core/containerpool/Container.scala"
logstore="$ow/common/scala/src/main/scala/org/apache/openwhisk/core/containerpool/logging/DockerToActivationLogStore.scala"
messages="$ow/common/scala/src/main/scala/org/apache/openwhisk/http/ErrorResponse.scala"
runtimes="$ow/ansible/files/runtimes.json"
standalone_res="$ow/core/standalone/src/main/resources"
invoker_pkg="$ow/core/invoker/src/main/scala/org/apache/openwhisk/core/containerpool"

for f in "$ow/settings.gradle" "$spi" "$container" "$logstore" "$messages" "$runtimes" "$standalone_res/standalone.conf"; do
  [ -f "$f" ] || die "$ow does not look like an OpenWhisk checkout (missing ${f#$ow/})"
done
[ -d "$invoker_pkg" ] || die "$ow has no core/invoker container pool sources"

if grep -q 'import akka\.' "$container"; then
  die "$ow is an Akka-based OpenWhisk (1.0.x or older); this patch is written for master (Pekko). See README.md, section 'OpenWhisk 1.0.0'."
fi

need() { # file, fixed string, what it means
  grep -qF -- "$2" "$1" || die "$ow is not a version this patch knows: ${1#$ow/} lacks $3"
}
need "$spi" 'trait ContainerFactoryProvider extends Spi' "the ContainerFactoryProvider SPI"
need "$spi" 'cpuLimit: Option[Double],' "createContainer with cpuLimit"
need "$spi" 'action: Option[ExecutableWhiskAction])' "the createContainer overload that receives the action"
need "$container" 'import org.apache.pekko' "Pekko"
need "$container" 'protected def callContainer(path: String,' "an overridable callContainer"
need "$container" 'entity: Option[WhiskAction] = None)(implicit transid: TransactionId): Future[Interval]' "initialize with the action entity"
need "$container" 'reschedule: Boolean = false)(implicit transid: TransactionId): Future[(Interval, ActivationResponse)]' "run with reschedule"
need "$logstore" 'object DockerToActivationLogStoreProvider' "DockerToActivationLogStoreProvider"
need "$messages" 'def truncateLogs(limit: ByteSize)' "Messages.truncateLogs"
need "$ow/settings.gradle" "include 'core:standalone'" "the standalone server"

target="$invoker_pkg/wasm"
if [ -d "$target" ] && [ ! -f "$target/WasmContainerFactory.scala" ]; then
  die "${target#$ow/} exists but was not written by this patch; not touching it"
fi

# --- sources ------------------------------------------------------------------------------
rm -rf "$target"
mkdir -p "$target/client"
cp "$here"/src/main/scala/org/apache/openwhisk/core/containerpool/wasm/*.scala "$target/"
cp "$here"/executor-client/src/main/scala/org/apache/openwhisk/core/containerpool/wasm/client/*.scala "$target/client/"
echo "sources      -> ${target#$ow/}/ ($(find "$target" -name '*.scala' | wc -l) files)"

# --- the scheduler path passes the action (upstream/fpc-pass-action.patch) ------------------
# FunctionPullingContainerProxy gives the action neither to createContainer nor to initialize;
# ContainerProxy gives both, and the wasm containers need its annotations and limits.
fpc_patch="$here/upstream/fpc-pass-action.patch"
if patch -d "$ow" -p1 -R --dry-run --force --silent < "$fpc_patch" >/dev/null 2>&1; then
  echo "scheduler    -> FunctionPullingContainerProxy already passes the action"
elif patch -d "$ow" -p1 --forward --dry-run --silent < "$fpc_patch" >/dev/null 2>&1; then
  patch -d "$ow" -p1 --forward --silent < "$fpc_patch"
  echo "scheduler    -> FunctionPullingContainerProxy passes the action (upstream/fpc-pass-action.patch)"
else
  die "$ow is not a version this patch knows: upstream/fpc-pass-action.patch does not apply to FunctionPullingContainerProxy.scala"
fi

# --- standalone configuration ----------------------------------------------------------------
cp "$here/conf/standalone-wasm.conf" "$standalone_res/standalone-wasm.conf"
echo "config       -> ${standalone_res#$ow/}/standalone-wasm.conf"

# --- the wasm kind in runtimes.json ----------------------------------------------------------
# Inserted as text right after the opening of "runtimes", so the rest of the file keeps its
# formatting; then checked by parsing the result.
python3 - "$runtimes" "$here/conf/runtimes-wasm.json" <<'PY'
import json, re, sys
path, fragment_path = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
fragment = json.load(open(fragment_path, encoding="utf-8"))
manifest = json.loads(text)
runtimes = manifest.get("runtimes")
if not isinstance(runtimes, dict):
    sys.exit(f"apply.sh: {path} has no \"runtimes\" object")
if "wasm" in runtimes:
    if runtimes["wasm"] == fragment["wasm"]:
        print("runtimes     -> wasm:0.1 already in ansible/files/runtimes.json")
        sys.exit(0)
    sys.exit(f"apply.sh: {path} already declares a different \"wasm\" family; not replacing it")
m = re.search(r'^(\s*)"runtimes"\s*:\s*\{\s*\n', text, re.M)
if not m:
    sys.exit(f"apply.sh: cannot find the \"runtimes\" object in {path}")
indent = m.group(1) + "    "
body = json.dumps(fragment["wasm"], indent=4).splitlines()
entry = indent + '"wasm": ' + body[0] + "\n" + "".join(indent + l + "\n" for l in body[1:-1]) + indent + body[-1] + ",\n"
patched = text[: m.end()] + entry + text[m.end():]
check = json.loads(patched)
assert check["runtimes"]["wasm"] == fragment["wasm"]
assert {k: v for k, v in check["runtimes"].items() if k != "wasm"} == runtimes
open(path, "w", encoding="utf-8").write(patched)
print("runtimes     -> wasm:0.1 added to ansible/files/runtimes.json")
PY

echo "done. Build OpenWhisk as usual; see $here/README.md for running the standalone server."

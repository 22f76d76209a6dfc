#!/usr/bin/env bash
# Builds the AssemblyScript sieve (sieve.ts) into target/sieve/sieve.wasm: the compiler and the
# WASI shim at the versions package-lock.json pins (`npm ci` from the npm registry, into
# target/sieve), -O3, the stub runtime (one activation allocates and exits), no assertions.
# Prints the module's path and SHA-256. Idempotent: nothing is rebuilt when sieve.ts and the
# lock file are unchanged.
#
#   eval/sieve/build.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(cd "$here/../.." && pwd)/target/sieve"
mkdir -p "$out"
command -v npm >/dev/null || {
    echo "build.sh: npm is needed (Node.js)" >&2
    exit 1
}
stamp="$(cat "$here/sieve.ts" "$here/package-lock.json" | sha256sum | cut -c1-64)"
if [[ ! -f "$out/sieve.wasm" || "$(cat "$out/stamp" 2>/dev/null)" != "$stamp" ]]; then
    cp "$here/package.json" "$here/package-lock.json" "$here/sieve.ts" "$out/"
    (cd "$out" && npm ci --no-audit --no-fund --loglevel=error >&2 &&
        npx asc sieve.ts --config ./node_modules/@assemblyscript/wasi-shim/asconfig.json \
            -O3 --runtime stub --noAssert -o sieve.wasm >&2)
    echo "$stamp" >"$out/stamp"
fi
echo "$out/sieve.wasm $(sha256sum "$out/sieve.wasm" | cut -c1-64)"

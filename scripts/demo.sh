#!/usr/bin/env bash
# The demo: builds the executor, the precompiler and the example actions, starts the executor,
# drives several actions through /init and /run with the bodies OpenWhisk's invoker sends
# (portable and signed precompiled code, logs, context, capabilities, errors), prints results
# and logs, and stops the executor.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

port=${DEMO_PORT:-9000}
work=$(mktemp -d)
trap 'kill "${executor_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

echo "==> building guest actions"
actions/build.sh
echo "==> building executor and precompiler"
cargo build --release --locked

echo "==> operator key and a signed precompiled artifact of 'hash'"
target/release/wasm-precompile keygen --out "$work/operator"
target/release/wasm-precompile compile --runtime wasmtime -- \
    actions/dist/hash.wasm --sign-key "$work/operator.pem" --zip -o "$work/hash.zip"

python3 - "$work/net-port" <<'PY' &
# A local HTTP server for the I/O action: answers every GET after a short pause.
import http.server, socketserver, sys, time
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(0.05)
        body = b'{"greeting": "hello from a local service"}'
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args): pass
with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as server:
    open(sys.argv[1], "w").write(str(server.server_address[1]))
    server.serve_forever()
PY
server_pid=$!
trap 'kill "${executor_pid:-}" "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -s "$work/net-port" ]] && break; sleep 0.05; done
net_port=$(cat "$work/net-port")

# Per-namespace quotas mount a filesystem per namespace, which needs root; as another user the
# demo's grant goes without one.
quota=(--dir-quota-mb 64)
[[ $(id -u) -eq 0 ]] || quota=(--dir-quota-mb 0)
echo "==> starting wasm-executor on 127.0.0.1:$port (${quota[*]})"
RUST_LOG=${RUST_LOG:-info} target/release/wasm-executor-wasmtime \
    --listen "127.0.0.1:$port" --state-dir "$work/state" "${quota[@]}" \
    --trusted-key "$work/operator.pub" --net-allow "127.0.0.1:$net_port" \
    --js-engine actions/dist/quickjs.wasm \
    --python-engine actions/dist/python.wasm \
    2>"$work/executor.log" &
executor_pid=$!

python3 scripts/demo_driver.py "http://127.0.0.1:$port" "$work" "$net_port"
echo
echo "==> executor log (last lines)"
tail -n 8 "$work/executor.log"

"""Drives the running executor the way OpenWhisk's invoker does and prints what happens."""
import base64, http.client, io, json, sys, time, urllib.parse, zipfile

base, work, net_port = sys.argv[1], sys.argv[2], sys.argv[3]
url = urllib.parse.urlparse(base)
# demo.sh starts the executor with --state-dir WORK/state: the `dir` annotation names the path
# the action sees, and the directory lies beneath its namespace's, WORK/state/grants/guest/data.
namespace, granted = "guest", "/data"


def call(method, path, body=None):
    """One request on a fresh connection, as the invoker does."""
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    data = json.dumps(body).encode() if body is not None else None
    started = time.perf_counter()
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    payload = resp.read()
    took = (time.perf_counter() - started) * 1000
    conn.close()
    return resp.status, payload.decode(), took


def zipped(path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.write(path, arcname=path.rsplit("/", 1)[-1])
    return buf.getvalue()


def init(cid, code_bytes, **extra):
    # Text is sent as text (binary: false), as OpenWhisk sends a .js file; modules as base64.
    text = isinstance(code_bytes, str)
    value = {"name": cid, "main": "main", "binary": not text,
             "code": code_bytes if text else base64.b64encode(code_bytes).decode(),
             "env": {"__OW_NAMESPACE": "guest", "__OW_ACTION_NAME": f"/guest/{cid}"}}
    value.update(extra)
    return call("POST", f"/{cid}/init", {"value": value})


def run(cid, params, timeout_ms=60000):
    deadline = str(int(time.time() * 1000) + timeout_ms)
    body = {"value": params, "namespace": "guest", "action_name": f"/guest/{cid}",
            "action_version": "0.0.1", "activation_id": f"{cid}-{int(time.time()*1e6)}",
            "transaction_id": "demo", "deadline": deadline}
    return call("POST", f"/{cid}/run", body)


for _ in range(200):
    try:
        status, health, _ = call("GET", "/health")
        if status == 200:
            break
    except OSError:
        time.sleep(0.05)
print(f"executor: {health}\n")

dist = "actions/dist"
demos = [
    ("add", zipped(f"{dist}/add.wasm"), {}, {"param1": 2, "param2": 2}, "portable Wasm in a zip, as `wsk action create` uploads it"),
    ("hash", open(f"{work}/hash.zip", "rb").read(), {}, {"iterations": 100000}, "signed precompiled artifact (CPU-bound)"),
    ("echo", zipped(f"{dist}/echo.wasm"), {}, {"msg": "héllo ☃", "__log": ["a log line"], "__err": ["a warning"]}, "stdout/stderr become activation logs"),
    ("env", zipped(f"{dist}/env.wasm"), {}, {"who": "demo"}, "the activation context as __OW_* variables"),
    ("wordcount", zipped(f"{dist}/wordcount.wasm"), {}, {"text": "WebAssembly actions written in C"}, "an action written in C"),
    ("filesys", zipped(f"{dist}/filesys.wasm"), {"namespace": namespace, "annotations": {"dir": granted}},
     {"dir": granted, "file": "note.txt", "content": "persisted"},
     f"`dir` annotation: a directory of namespace {namespace!r} (state/grants/{namespace}{granted})"),
    ("net", zipped(f"{dist}/net.wasm"), {"annotations": {"net_access": True}},
     {"url": f"http://127.0.0.1:{net_port}/"}, "`net_access` annotation: HTTP GET from the guest"),
    ("hello-js", open("actions/js/hello.js").read(), {"kind": "nodejs:20"}, {"name": "Ada", "lang": "fr"},
     "JavaScript (kind nodejs:20) on the QuickJS engine, started from the action's snapshot"),
    ("hello-py", open("actions/py/hello.py").read(), {"kind": "python:3"}, {"name": "Ada", "lang": "de"},
     "Python (kind python:3) on the CPython engine, started from the action's snapshot"),
    ("panic", zipped(f"{dist}/panic.wasm"), {}, {"message": "something went wrong"}, "a trapping guest is a developer error (502)"),
    ("loop", zipped(f"{dist}/loop.wasm"), {}, {"forever": True}, "an infinite loop stops at its deadline"),
]

for cid, code, extra, params, what in demos:
    print(f"--- {cid}: {what}")
    status, body, took = init(cid, code, **extra)
    print(f"  /init -> {status} {body}  ({took:.1f} ms)")
    timeout = 500 if cid == "loop" else 60000
    status, body, took = run(cid, params, timeout)
    print(f"  /run  -> {status} {body[:300]}  ({took:.1f} ms)")
    if cid in ("add", "echo", "hello-js", "hello-py"):
        status, body, took = run(cid, params)
        print(f"  /run  -> {status} (warm, {took:.2f} ms)")
    status, logs, _ = call("GET", f"/{cid}/logs")
    for line in logs.splitlines():
        entry = json.loads(line)
        print(f"  log {entry['stream']}: {entry['log'].rstrip()}")
    call("POST", f"/{cid}/destroy")
    print()

status, metrics, _ = call("GET", "/metrics")
print("metrics:")
for line in metrics.splitlines():
    if line.startswith(("wasm_executor_activations_total", "wasm_executor_inits_total")):
        print("  " + line)

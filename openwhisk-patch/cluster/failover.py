#!/usr/bin/env python3
"""Load over both invokers of cluster.py's layout, one executor killed and restarted under it.

    failover.py [--work DIR] [--seconds 90] [--clients 8] [--kill-at 30] [--restart-at 60]
                [--actions DIR]

Creates a wasm action (`add`), then CLIENTS threads invoke it blocking, back to back, for SECONDS.
At KILL-AT seconds invoker 0's executor is killed (SIGKILL), at RESTART-AT it is started again
(`cluster.py executor`). The controller's /invokers is read every second. Afterwards every
activation is looked up by its id, also those whose blocking call ended in a 202, and each
invoker's log says which activations it ran.

Prints the timeline of invoker health, throughput per invoker and per phase, and the count of
records against requests; exit status 1 when a request has no activation record or an
activation is blamed on the action (developer or application error), else 0.
"""

import argparse
import base64
import collections
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import cluster  # noqa: E402  (ports and the work directory's layout)


def request(method, url, auth, body=None, timeout=120):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), method=method)
    req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())
        except ValueError:
            return e.code, {}
    except OSError as e:
        return 0, {"error": str(e)}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default=os.path.join(REPO, "target", "cluster"))
    p.add_argument("--seconds", type=float, default=90)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--kill-at", type=float, default=30)
    p.add_argument("--restart-at", type=float, default=60)
    p.add_argument("--actions", default=os.path.join(REPO, "actions", "dist"))
    args = p.parse_args(argv)
    work = cluster.Work(args.work)
    saved = json.load(open(work.path("conf", "up.json")))
    auth = open(os.path.join(saved["openwhisk"], "ansible", "files", "auth.guest")).read().strip()
    api = f"http://127.0.0.1:{cluster.PORTS['controller']}"
    ns = f"{api}/api/v1/namespaces/_"

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("add.wasm", open(os.path.join(args.actions, "add.wasm"), "rb").read())
    code = base64.b64encode(buf.getvalue()).decode()
    name = f"failover-{int(time.time())}"
    status, answer = request("PUT", f"{ns}/actions/{name}?overwrite=true", auth,
                             {"exec": {"kind": "wasm:0.1", "binary": True, "code": code}})
    if status != 200:
        sys.exit(f"failover.py: creating {name}: HTTP {status} {answer}")

    start = time.time()
    calls = []  # (t, http status, activation id, response status)
    lock = threading.Lock()
    stop = threading.Event()

    def client(k):
        i = 0
        while not stop.is_set():
            i += 1
            t = time.time() - start
            status, answer = request("POST", f"{ns}/actions/{name}?blocking=true", auth, {"param1": k, "param2": i})
            aid = (answer or {}).get("activationId")
            outcome = (answer or {}).get("response", {}).get("status")
            with lock:
                calls.append((t, status, aid, outcome))

    health = []

    def watch():
        while not stop.is_set():
            status, answer = request("GET", f"{api}/invokers", auth, timeout=5)
            health.append((time.time() - start, answer if status == 200 else {"controller": str(status)}))
            time.sleep(1)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
    threads.append(threading.Thread(target=watch))
    for t in threads:
        t.start()
    killed = restarted = None
    while time.time() - start < args.seconds:
        now = time.time() - start
        if killed is None and now >= args.kill_at:
            os.kill(work.pid("executor0"), 9)
            killed = now
            print(f"{now:6.1f} s  executor0 killed (SIGKILL)", flush=True)
        if restarted is None and now >= args.restart_at:
            subprocess.run([sys.executable, os.path.join(HERE, "cluster.py"), "--work", args.work,
                            "executor", "start", "0"], check=True, stdout=subprocess.DEVNULL)
            restarted = time.time() - start
            print(f"{restarted:6.1f} s  executor0 started again", flush=True)
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    took = time.time() - start

    # Health transitions.
    print("\ninvoker health (controller's /invokers):")
    last = None
    for t, states in health:
        if states != last:
            print(f"  {t:6.1f} s  {json.dumps(states, sort_keys=True)}")
            last = states

    # Every activation's record, including those whose blocking call ended in a 202.
    time.sleep(5)
    records = {}
    for _, _, aid, _ in calls:
        if aid and aid not in records:
            for _ in range(30):
                status, answer = request("GET", f"{ns}/activations/{aid}", auth)
                if status == 200:
                    records[aid] = answer["response"]["status"]
                    break
                time.sleep(1)
    without_id = [c for c in calls if not c[2]]
    missing = [c for c in calls if c[2] and c[2] not in records]

    # Which invoker ran which activation.
    ran_by = {}
    for i in range(saved["invokers"]):
        for line in open(work.path("logs", f"invoker{i}.log"), errors="replace"):
            m = re.search(r"posted completion of activation ([0-9a-f]{32})", line)
            if m:
                ran_by[m.group(1)] = i

    phases = [("before the kill", 0, killed or took), ("executor0 down", killed or took, restarted or took),
              ("after the restart", restarted or took, took)]
    print(f"\n{len(calls)} requests in {took:.0f} s by {args.clients} clients:")
    print(f"  {'phase':22} {'requests':>8} {'per s':>7} {'invoker0':>9} {'invoker1':>9}  outcomes")
    for label, lo, hi in phases:
        sel = [c for c in calls if lo <= c[0] < hi]
        by_invoker = collections.Counter(ran_by.get(c[2]) for c in sel)
        outcomes = collections.Counter(records.get(c[2], "no record") for c in sel)
        rate = len(sel) / (hi - lo) if hi > lo else 0
        print(f"  {label:22} {len(sel):8} {rate:7.1f} {by_invoker.get(0, 0):9} {by_invoker.get(1, 0):9}  "
              f"{dict(outcomes)}")
    statuses = collections.Counter(c[1] for c in calls)
    outcomes = collections.Counter(records.values())
    print(f"\nHTTP answers: {dict(statuses)}")
    print(f"activation records: {len(records)} for {len(calls)} requests "
          f"({len(without_id)} answers without an activation id, {len(missing)} ids without a record)")
    print(f"outcomes: {dict(outcomes)}")
    blamed = outcomes.get("action developer error", 0) + outcomes.get("application error", 0)
    request("DELETE", f"{ns}/actions/{name}", auth)
    ok = not without_id and not missing and blamed == 0
    print("PASS: every request has a record, none blamed on the action" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

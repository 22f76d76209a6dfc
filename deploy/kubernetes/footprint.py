#!/usr/bin/env python3
"""Measures the executor's resident memory for sizing its container (README.md, "Sizing").

Starts the executor on a free loopback port and reads VmRSS from /proc:
  - idle;
  - after N containers of each given action (POST /{id}/init with the module, then one /run
    each), per warm container;
  - after destroying them (what the allocator keeps);
  - at the peak of K concurrent activations of the `memhog` action each touching M MiB of
    linear memory (the guest memory the sidecar's limit must cover).

Usage: deploy/kubernetes/footprint.py [--executor target/release/wasm-executor-wasmtime]
           [--actions actions/dist] [--containers 200] [--hogs 16] [--hog-mb 120]
Needs the built actions (make actions): echo.wasm, hash.wasm, memhog.wasm.
"""
import argparse
import base64
import concurrent.futures
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOKEN = "footprint-" + os.urandom(8).hex()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Executor:
    def __init__(self, binary, state):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        token = os.path.join(state, "token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token, 0o600)
        self.proc = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{self.port}", "--state-dir", os.path.join(state, "state"),
             "--auth-token-file", token, "--max-concurrent", "64", "--pool-threads", "64"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                self.call("/health")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the executor did not start")

    def call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     method="GET" if data is None else "POST")
        req.add_header("Authorization", f"Bearer {TOKEN}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=120) as answer:
            return json.loads(answer.read() or b"null")

    def init(self, cid, module_path, memory_mb):
        code = base64.b64encode(open(module_path, "rb").read()).decode()
        self.call(f"/{cid}/init", {"value": {"code": code, "binary": True, "main": "main", "name": cid,
                                             "limits": {"memory": memory_mb, "timeout": 60000, "logs": 1}}})

    def run(self, cid, params):
        return self.call(f"/{cid}/run", {"value": params, "deadline": str(int(time.time() * 1000) + 60000)})

    def rss(self):
        time.sleep(1.0)
        return rss_kib(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default=os.path.join(ROOT, "target/release/wasm-executor-wasmtime"))
    parser.add_argument("--actions", default=os.path.join(ROOT, "actions/dist"))
    parser.add_argument("--containers", type=int, default=200)
    parser.add_argument("--hogs", type=int, default=16)
    parser.add_argument("--hog-mb", type=int, default=120)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as state:
        executor = Executor(args.executor, state)
        try:
            print(f"executor: {subprocess.run([args.executor, '--version'], capture_output=True, text=True).stdout.strip()}, "
                  f"health {json.dumps(executor.call('/health'))}")
            idle = executor.rss()
            print(f"idle: {mib(idle)}")
            for module, params in (("echo", {"a": 1}), ("hash", {"rounds": 1})):
                before = executor.rss()
                path = os.path.join(args.actions, module + ".wasm")
                for i in range(args.containers):
                    executor.init(f"{module}{i}", path, 256)
                for i in range(args.containers):
                    executor.run(f"{module}{i}", params)
                after = executor.rss()
                print(f"{module}: {args.containers} warm containers: {mib(after)}, "
                      f"{(after - before) / args.containers:.0f} KiB per container")
                for i in range(args.containers):
                    executor.call(f"/{module}{i}/destroy", {})
            print(f"after destroying them all: {mib(executor.rss())}")

            path = os.path.join(args.actions, "memhog.wasm")
            for i in range(args.hogs):
                executor.init(f"hog{i}", path, args.hog_mb + 16)
            base = executor.rss()
            peak, done = [base], threading.Event()

            def sample():
                while not done.is_set():
                    peak[0] = max(peak[0], rss_kib(executor.proc.pid))
                    time.sleep(0.001)

            sampler = threading.Thread(target=sample)
            sampler.start()
            with concurrent.futures.ThreadPoolExecutor(args.hogs) as pool:
                results = list(pool.map(lambda i: executor.run(f"hog{i}", {"mb": args.hog_mb}), range(args.hogs)))
            done.set()
            sampler.join()
            assert all(r.get("allocated_mb") == args.hog_mb for r in results), results[:2]
            print(f"memhog: {args.hogs} concurrent activations touching {args.hog_mb} MiB each: "
                  f"{mib(base)} before, peak {mib(peak[0])} (+{mib(peak[0] - base)}, "
                  f"{(peak[0] - base) / 1024 / args.hogs:.1f} MiB per activation), {mib(executor.rss())} after")
        finally:
            executor.stop()


if __name__ == "__main__":
    main()

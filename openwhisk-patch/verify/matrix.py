#!/usr/bin/env python3
"""The patch's verification matrix against a running OpenWhisk (Python standard library only).

    matrix.py --api URL [--auth UUID:KEY] [--actions DIR] [--executor CMD] [--points LIST]
              [--path scheduler|containerpool] [--docker-image IMAGE]

Creates actions from the portable modules in DIR (default: actions/dist of this repository),
invokes them through OpenWhisk's REST API and checks what OpenWhisk makes of each outcome:
results, logs, the four activation statuses and their texts. With --executor, the points that
need another executor (stopped, with a token the invoker does not send, at capacity) call
`CMD stop` and `CMD start [EXECUTOR ARGS...]` to change it; without it they are skipped. --path
says which invoker path runs the actions, for the one point whose answer differs (an executor
with no room for another container: rescheduled on the scheduler path, a system error on the
ContainerPool path). With --docker-image (an invoker with MixedContainerFactoryProvider), a
blackbox action of that image runs beside a wasm action.

Prints one line per point and a summary; exit status 0 when every point run passed, 1 otherwise,
2 on bad usage.
"""

import argparse
import base64
import contextlib
import io
import json
import os
import random
import re
import string
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile

GUEST_KEY = ("23bc46b1-71f6-4ed5-8c54-816aa4f8c502:"
             "123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP")
SENTINEL = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"
SYSTEM_ERROR = "The action could not be run because of a system error."
AT_CAPACITY = "The action could not be run because the system is at capacity; please retry."


class Api:
    """OpenWhisk's REST API for one namespace key."""

    def __init__(self, base, auth):
        self.base = base.rstrip("/") + "/api/v1/namespaces/_"
        self.auth = "Basic " + base64.b64encode(auth.encode()).decode()

    def call(self, method, path, body=None, timeout=180):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", self.auth)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, {"raw": text.decode(errors="replace")}

    def create(self, name, module, main=None, limits=None, annotations=None):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr(os.path.basename(module), open(module, "rb").read())
        exec_ = {"kind": "wasm:0.1", "binary": True, "code": base64.b64encode(buf.getvalue()).decode()}
        if main:
            exec_["main"] = main
        body = {"exec": exec_, "limits": limits or {}}
        if annotations:
            body["annotations"] = [{"key": k, "value": v} for k, v in annotations.items()]
        status, answer = self.call("PUT", f"/actions/{name}?overwrite=true", body)
        if status != 200:
            raise RuntimeError(f"creating {name}: HTTP {status} {answer}")

    def invoke(self, name, params=None):
        """The activation record of a blocking invocation, or {"_http": status} for a 202."""
        status, answer = self.call("POST", f"/actions/{name}?blocking=true", params or {})
        if status == 202:
            return {"_http": 202, "activationId": answer.get("activationId")}
        if "response" not in answer:
            raise RuntimeError(f"invoking {name}: HTTP {status} {answer}")
        return answer

    def logs(self, activation_id):
        for _ in range(20):
            status, answer = self.call("GET", f"/activations/{activation_id}/logs")
            if status == 200:
                return answer.get("logs", [])
            time.sleep(0.5)
        return None

    def delete(self, name):
        self.call("DELETE", f"/actions/{name}")


def status_of(record):
    return record.get("response", {}).get("status", f"HTTP {record.get('_http')}")


def result_of(record):
    return record.get("response", {}).get("result", {})


def concurrently(calls):
    """Runs the calls on a thread each and returns their results, in order."""
    results = [None] * len(calls)

    def run(i):
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def annotation(record, key):
    for a in record.get("annotations", []):
        if a.get("key") == key:
            return a.get("value")
    return None


class Matrix:
    def __init__(self, args):
        self.api = Api(args.api, args.auth)
        self.dist = args.actions
        self.executor = args.executor
        self.scheduler = args.path == "scheduler"
        self.docker_image = args.docker_image
        self.suffix = "".join(random.choice(string.ascii_lowercase) for _ in range(5))
        self.created = []
        self.results = []

    def module(self, name):
        return os.path.join(self.dist, name + ".wasm")

    def action(self, base, module, **kw):
        name = f"m-{base}-{self.suffix}"
        self.api.create(name, self.module(module), **kw)
        self.created.append(name)
        return name

    def executor_cmd(self, *words):
        subprocess.run(self.executor.split() + list(words), check=True, stdout=subprocess.DEVNULL)

    @contextlib.contextmanager
    def executor_started_with(self, *flags):
        """The executor restarted with FLAGS for the block, then restarted as it was."""
        self.executor_cmd("stop")
        self.executor_cmd("start", *flags)
        try:
            yield
        finally:
            self.executor_cmd("stop")
            self.executor_cmd("start")

    def check(self, number, title, ok, seen):
        self.results.append((number, title, ok, seen))
        print(f"{'PASS' if ok else 'FAIL'}  {number:>2}. {title}: {seen}", flush=True)

    # ---------------------------------------------------------------- the action's own outcomes
    def p1_result(self):
        name = self.action("add", "add")
        cold = self.api.invoke(name, {"param1": 2, "param2": 2})
        warm = self.api.invoke(name, {"param1": 2, "param2": 2})
        ok = result_of(cold) == {"result": 4} and result_of(warm) == {"result": 4}
        self.check(1, "add 2+2", ok, f"{result_of(cold)}, cold {cold.get('duration')} ms "
                   f"(init {annotation(cold, 'initTime')} ms), warm {warm.get('duration')} ms")

    def p2_main(self):
        name = self.action("multiply", "add", main="multiply")
        r = self.api.invoke(name, {"param1": 3, "param2": 4})
        self.check(2, "--main multiply 3*4", result_of(r) == {"result": 12}, result_of(r))

    def p3_logs(self):
        name = self.action("echo", "echo")
        r = self.api.invoke(name, {"__log": ["out one", "out two"], "__err": ["err one"]})
        logs = self.api.logs(r["activationId"]) or []
        texts = [re.sub(r"^\S+\s+(stdout|stderr): ", "", line) for line in logs]
        ok = texts == ["out one", "out two", "err one"] and not any(SENTINEL in line for line in logs)
        self.check(3, "stdout and stderr in the activation's logs, no sentinels", ok, texts)

    def p4_trap(self):
        name = self.action("panic", "panic")
        r = self.api.invoke(name, {"message": "boom at matrix"})
        logs = self.api.logs(r["activationId"]) or []
        ok = status_of(r) == "action developer error" and any("boom at matrix" in line for line in logs)
        self.check(4, "a trap is the developer's error, its message in the logs", ok,
                   f"{status_of(r)}: {result_of(r).get('error')}")

    def p5_application_error(self):
        name = self.action("apperror", "echo")
        r = self.api.invoke(name, {"error": "no such order"})
        ok = status_of(r) == "application error" and result_of(r) == {"error": "no such order"}
        self.check(5, "{error} is an application error", ok, f"{status_of(r)}: {result_of(r)}")

    def p6_time_limit(self):
        name = self.action("loop", "loop", limits={"timeout": 1000})
        r = self.api.invoke(name, {"forever": True})
        text = str(result_of(r).get("error"))
        ok = status_of(r) == "action developer error" and "1000 milliseconds" in text
        self.check(6, "an endless loop stops at its 1 s limit", ok, f"{status_of(r)}: {text}")

    def p7_log_limit(self):
        name = self.action("manylogs", "echo", limits={"logs": 1})
        lines = [f"{i:05d} " + "x" * 44 for i in range(10000)]
        r = self.api.invoke(name, {"__log": lines})
        logs = self.api.logs(r["activationId"]) or []
        notice = logs[-1] if logs else ""
        ok = status_of(r) == "success" and 1000 < len(logs) < 10000 and "truncated" in notice
        self.check(7, "10,000 log lines over a 1 MB log limit", ok, f"{len(logs)} lines kept, last: {notice[-90:]}")

    def p8_refused_grant(self):
        name = self.action("dotdot", "filesys", annotations={"dir": "/tmp/../etc"})
        r = self.api.invoke(name, {})
        text = str(result_of(r).get("error"))
        ok = status_of(r) == "action developer error" and ".." in text
        self.check(8, "a dir grant that climbs out (/tmp/../etc) is refused at init", ok, f"{status_of(r)}: {text[:120]}")

    def p9_parallel(self):
        name = self.action("par", "add")
        wrong = []

        def worker(ids):
            for i in ids:
                r = self.api.invoke(name, {"param1": i, "param2": 1})
                if result_of(r) != {"result": i + 1}:
                    wrong.append((i, status_of(r), result_of(r)))

        concurrently([lambda k=k: worker(range(k, 40, 16)) for k in range(16)])
        self.check(9, "40 blocking invocations, 16 at a time", not wrong, f"{40 - len(wrong)} of 40 correct {wrong[:2]}")

    def p10_concurrency(self):
        name = self.action("conc", "loop", limits={"concurrency": 8})
        records = concurrently([lambda: self.api.invoke(name, {"ms": 800})] * 8)
        cold = sum(1 for r in records if annotation(r, "initTime") is not None)
        ok = all(status_of(r) == "success" for r in records) and cold == 1
        self.check(10, "8 activations with concurrency 8 share one container", ok,
                   f"{sum(status_of(r) == 'success' for r in records)} of 8 succeeded, {cold} cold start(s)")

    # ------------------------------------------------------------------- the platform's failures
    def p11_executor_down(self):
        name = self.action("down", "add")
        self.api.invoke(name, {"param1": 1, "param2": 1})
        self.executor_cmd("stop")
        try:
            r = self.api.invoke(name, {"param1": 1, "param2": 1})
        finally:
            self.executor_cmd("start")
        after = self.api.invoke(name, {"param1": 1, "param2": 1})
        text = str(result_of(r).get("error"))
        ok = (status_of(r) == "whisk internal error" and text == SYSTEM_ERROR
              and result_of(after) == {"result": 2})
        self.check(11, "executor stopped: a system error with a fixed text; served again once it is back", ok,
                   f"{status_of(r)}: {text}; after restart {result_of(after)}")

    def p12_wrong_token(self):
        name = self.action("token", "add")
        token_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"matrix-token-{self.suffix}")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write("a-token-the-invoker-does-not-have\n")
        try:
            with self.executor_started_with("--auth-token-file", token_file):
                first = self.api.invoke(name, {"param1": 1, "param2": 1})
                second = self.api.invoke(name, {"param1": 1, "param2": 1})
        finally:
            os.unlink(token_file)
        texts = [str(result_of(r).get("error")) for r in (first, second)]
        ok = all(status_of(r) == "whisk internal error" for r in (first, second)) and texts == [SYSTEM_ERROR] * 2
        self.check(12, "an executor the invoker cannot authenticate to: system errors, no executor text", ok,
                   f"{[status_of(r) for r in (first, second)]}: {texts[0]}")

    def p13_busy(self):
        name = self.action("busy", "loop", limits={"concurrency": 3})
        with self.executor_started_with("--max-concurrent", "1", "--queue-depth", "0"):
            records = concurrently([lambda: self.api.invoke(name, {"ms": 1500})] * 3)
        durations = sorted(r.get("duration", -1) for r in records)
        ok = all(status_of(r) == "success" for r in records) and all(1400 <= d < 2500 for d in durations)
        self.check(13, "one slot, three activations: each waits and runs, its wait not charged", ok,
                   f"{[status_of(r) for r in records]}, durations {durations} ms")

    def p14_full(self):
        first = self.action("full1", "add")
        second = self.action("full2", "add")
        with self.executor_started_with("--max-containers", "1"):
            held = self.api.invoke(first, {"param1": 1, "param2": 1})
            r = self.api.invoke(second, {"param1": 1, "param2": 1})
        text = str(result_of(r).get("error"))
        if self.scheduler:
            # Rescheduled until the scheduler's queue gives up or another invoker takes it: never
            # the action's error.
            ok = result_of(held) == {"result": 2} and status_of(r) != "action developer error"
        else:
            ok = result_of(held) == {"result": 2} and status_of(r) == "whisk internal error" and text == AT_CAPACITY
        self.check(14, "no room for another container", ok, f"{status_of(r)}: {text}")

    # ------------------------------------------------------------- one invoker, two factories
    def p15_mixed(self):
        # A blackbox image goes to the other factory (Docker); the executor could not run it (no
        # code: it would answer "Missing main/no code to execute.").
        name = f"m-docker-{self.suffix}"
        status, answer = self.api.call("PUT", f"/actions/{name}?overwrite=true",
                                       {"exec": {"kind": "blackbox", "image": self.docker_image}})
        if status != 200:
            raise RuntimeError(f"creating {name}: HTTP {status} {answer}")
        self.created.append(name)
        wasm = self.action("beside", "add")
        docker = self.api.invoke(name, {"from": "docker"})
        beside = self.api.invoke(wasm, {"param1": 20, "param2": 22})
        ok = result_of(docker).get("from") == "docker" and result_of(beside) == {"result": 42}
        self.check(15, "a blackbox image runs in Docker beside a wasm action", ok,
                   f"docker: {status_of(docker)} {result_of(docker)} in {docker.get('duration')} ms; "
                   f"wasm: {result_of(beside)}")

    def run(self, points):
        failed = 0
        for number in points:
            method = next(m for m in dir(self) if m.startswith(f"p{number}_"))
            if 11 <= number <= 14 and not self.executor:
                print(f"SKIP  {number:>2}. (needs --executor)", flush=True)
                continue
            if number == 15 and not self.docker_image:
                print(f"SKIP  {number:>2}. (needs --docker-image)", flush=True)
                continue
            try:
                getattr(self, method)()
            except Exception as e:  # a point that could not run is a failed point
                self.check(number, method, False, f"could not run: {e}")
        for name in self.created:
            self.api.delete(name)
        failed = sum(1 for r in self.results if not r[2])
        print(f"{len(self.results) - failed} of {len(self.results)} points passed")
        return 0 if failed == 0 else 1


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--api", required=True)
    p.add_argument("--auth", default=os.environ.get("OW_AUTH", GUEST_KEY))
    p.add_argument("--actions", default=os.path.join(here, "..", "..", "actions", "dist"))
    p.add_argument("--executor", help="command taking stop | start [ARGS...] for the executor")
    p.add_argument("--docker-image", help="a blackbox action image the other factory can run (point 15)")
    p.add_argument("--points", default="1-15")
    p.add_argument("--path", choices=["scheduler", "containerpool"], default="containerpool")
    args = p.parse_args(argv)
    points = []
    for part in args.points.split(","):
        lo, _, hi = part.partition("-")
        points += list(range(int(lo), int(hi or lo) + 1))
    return Matrix(args).run(points)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

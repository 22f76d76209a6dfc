#!/usr/bin/env python3
"""Cold starts, warm runs and memory of OpenWhisk's own action runtimes in Docker.

Does for one image what OpenWhisk's invoker (DockerContainerFactory + its container client) does
for a source action: `docker run -d` with the invoker's flags (those of
eval/wasm-bench/src/platform/docker.rs), the container's address from `docker inspect`,
`POST IP:8080/init` with the action's source (retried every 5 ms while the runtime's proxy does
not accept connections yet, for 60 s at most), `POST IP:8080/run`, `docker rm -f`.

  cold start   from just before `docker run` to the first /run answer (phases also kept:
               docker run, inspect, /init, /run)
  warm run     a /run on a container that already answered one
  memory       the container's cgroup memory as `docker stats` counts it (usage less inactive
               page cache), each of N warm containers, all N alive at once

Every /run answer is checked against the action's real output ({"greeting": "Hello, x!",
"rows": 200}), so that a broken runtime cannot pass as fast.

  eval/baseline/runtimes/coldstart.py --image owwasm-baseline/action-nodejs --language js \
      [--rounds 10] [--warm-runs 20] [--containers 0] [--cpuset-cpus LIST]

prints a JSON object (median, p10, p90, min, max, all samples, in ms / KiB) on stdout. From
Python:

  import coldstart
  coldstart.cold_start_ms("owwasm-baseline/action-python", coldstart.SOURCES["py"])
  coldstart.warm_run_ms(image, source, runs=20)            # list of ms
  coldstart.memory_per_container_kib(image, source, n=10)  # mean KiB per warm container

The docker CLI is used as it is (DOCKER_HOST from the environment, e.g.
eval "$(eval/baseline/dockerd.sh env)"). Standard library only.
"""
import argparse
import http.client
import itertools
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

# The hello actions of eval/engines.py, which measures the executor with them.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from engines import LANGUAGES  # noqa: E402

SOURCES = {language: spec["source"] for language, spec in LANGUAGES.items()}
PARAMS = {"name": "x"}
EXPECTED = {"greeting": "Hello, x!", "rows": 200}

PROXY_PORT = 8080
START_TIMEOUT_S = 60.0  # until the proxy accepts /init
INIT_RETRY_S = 0.005
HTTP_TIMEOUT_S = 60.0
# OpenWhisk's default action memory, and the cpu share of an invoker with 1024 MB of user
# memory (ContainerPoolConfig.cpuShare: 1024 / (1024 MB / 256 MB)).
MEMORY_MB = 256
CPU_SHARES = 256
GATEWAY = "172.17.0.1"  # docker0: where the invoker's __OW_API_HOST would point

_names = itertools.count()


class RuntimeError_(Exception):
    """The container or the runtime in it did not do what OpenWhisk expects."""


def docker(*args):
    """Runs the docker CLI; its stdout, or RuntimeError_ with its stderr."""
    done = subprocess.run(["docker", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError_(f"docker {' '.join(args[:2])}… failed: {done.stderr.strip()}")
    return done.stdout


def post(ip, path, body, timeout=HTTP_TIMEOUT_S):
    """POST a JSON body on a new connection; (status, decoded JSON or text)."""
    data = json.dumps(body).encode()
    conn = http.client.HTTPConnection(ip, PROXY_PORT, timeout=timeout)
    try:
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
    finally:
        conn.close()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


class Container:
    """One action container, started and initialised as the invoker does it.

    Use as a context manager (the container is removed at the end) or call remove(). Its /runs
    send `params` and expect `expected` (the hello action's by default).
    """

    def __init__(self, image, source, name="hello", cpuset_cpus=None, params=None, expected=None):
        self.image, self.source, self.action = image, source, name
        self.params = PARAMS if params is None else params
        self.expected = EXPECTED if expected is None else expected
        self.cpuset_cpus = cpuset_cpus
        self.id = self.ip = None
        self.phases = {}  # ms since just before `docker run`: run, inspect, init, run1
        self.first_result = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def start(self):
        """docker run, inspect, /init (retried until the proxy listens), first /run.

        Returns the cold start in ms (docker run → first /run answer)."""
        name = f"wskowbase_{os.getpid()}_{next(_names)}_{self.action}"
        args = ["run", "-d"]
        if self.cpuset_cpus:
            args += ["--cpuset-cpus", self.cpuset_cpus]
        args += [
            "--cpu-shares", str(CPU_SHARES),
            "--memory", f"{MEMORY_MB}m", "--memory-swap", f"{MEMORY_MB}m",
            "--network", "bridge",
            "-e", f"__OW_API_HOST=http://{GATEWAY}:3233",
            "--name", name,
            "--cap-drop", "NET_RAW", "--cap-drop", "NET_ADMIN",
            "--ulimit", "nofile=1024:1024",
            "--pids-limit", "1024",
            self.image,
        ]  # fmt: skip
        t0 = time.perf_counter()
        ms = lambda: (time.perf_counter() - t0) * 1000.0  # noqa: E731
        try:
            self.id = docker(*args).strip()
        except RuntimeError_:
            docker_quiet("rm", "-f", name)  # created but not started
            raise
        self.phases["run"] = ms()
        self.ip = docker(
            "inspect", "--format", "{{.NetworkSettings.Networks.bridge.IPAddress}}", self.id
        ).strip()
        if not self.ip:
            state = docker("inspect", "--format", "{{.State.Status}}", self.id).strip()
            raise RuntimeError_(
                f"{self.image}: container {self.id[:12]} has no bridge address ({state}); logs: {self.logs()}"
            )
        self.phases["inspect"] = ms()
        self.init()
        self.phases["init"] = ms()
        self.first_result = self.run()
        self.phases["run1"] = ms()
        return self.phases["run1"]

    def init(self):
        body = {"value": {"name": self.action, "main": "main", "code": self.source,
                          "binary": False, "env": {}}}  # fmt: skip
        started = time.monotonic()
        while True:
            try:
                status, answer = post(self.ip, "/init", body)
            except (ConnectionError, socket.timeout, http.client.HTTPException, OSError) as error:
                if time.monotonic() - started > START_TIMEOUT_S:
                    raise RuntimeError_(
                        f"{self.image}: no /init within {START_TIMEOUT_S:.0f} s ({error}); "
                        f"logs: {self.logs()}"
                    ) from error
                time.sleep(INIT_RETRY_S)
                continue
            if status != 200:
                raise RuntimeError_(f"{self.image}: /init answered {status}: {answer}; logs: {self.logs()}")
            return answer

    def run(self, params=None, check=True):
        """POST /run; the result, checked against the expected one unless check is False."""
        status, answer = post(self.ip, "/run", {"value": dict(self.params if params is None else params)})
        if status != 200 or (check and answer != self.expected):
            raise RuntimeError_(
                f"{self.image}: /run answered {status}: {answer!r}, expected {self.expected}; logs: {self.logs()}"
            )
        return answer

    def timed_run(self):
        """ms of one /run, its answer checked."""
        started = time.perf_counter()
        self.run()
        return (time.perf_counter() - started) * 1000.0

    def memory_bytes(self):
        return container_memory_bytes(self.id)

    def logs(self):
        if not self.id:
            return ""
        done = subprocess.run(["docker", "logs", "--tail", "20", self.id], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)  # fmt: skip
        return (done.stdout + done.stderr).strip()[-2000:]

    def remove(self):
        if self.id:
            docker_quiet("rm", "-f", self.id)
            self.id = None


def docker_quiet(*args):
    subprocess.run(["docker", *args], stdin=subprocess.DEVNULL, capture_output=True)


def container_memory_bytes(cid):
    """Memory of a container as `docker stats` counts it: cgroup usage less inactive page cache
    (cgroup v1 with the cgroupfs driver, cgroup v2, else `docker stats` itself)."""

    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return None

    def stat_field(stat, name):
        for line in (stat or "").splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
        return 0

    for usage_file, stat_file, inactive in (
        (f"/sys/fs/cgroup/memory/docker/{cid}/memory.usage_in_bytes",
         f"/sys/fs/cgroup/memory/docker/{cid}/memory.stat", "total_inactive_file"),
        (f"/sys/fs/cgroup/docker/{cid}/memory.current",
         f"/sys/fs/cgroup/docker/{cid}/memory.stat", "inactive_file"),
        (f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/memory.current",
         f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/memory.stat", "inactive_file"),
    ):  # fmt: skip
        usage = read(usage_file)
        if usage is not None:
            return max(0, int(usage) - stat_field(read(stat_file), inactive))
    text = docker("stats", "--no-stream", "--format", "{{.MemUsage}}", cid).split("/")[0].strip()
    units = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000, "MB": 1000**2, "GB": 1000**3}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * units[unit])
    raise RuntimeError_(f"cannot read the memory of container {cid[:12]}: {text!r}")


# --- the measurements -------------------------------------------------------------------------


def cold_start(image, source, cpuset_cpus=None):
    """One cold start in a fresh container, removed after: its phases in ms (run, inspect, init,
    run1 = the cold start) and the first result."""
    with Container(image, source, cpuset_cpus=cpuset_cpus) as c:
        c.start()
        return {"phases_ms": dict(c.phases), "result": c.first_result}


def cold_start_ms(image, source, cpuset_cpus=None):
    """ms from `docker run` to the first /run answer of a fresh container."""
    return cold_start(image, source, cpuset_cpus)["phases_ms"]["run1"]


def warm_run_ms(image, source, runs=20, cpuset_cpus=None):
    """ms of each of `runs` /run requests on one container after its first /run."""
    with Container(image, source, cpuset_cpus=cpuset_cpus) as c:
        c.start()
        return [c.timed_run() for _ in range(runs)]


def memory_samples_kib(image, source, n=10, settle_s=1.0, cpuset_cpus=None):
    """KiB of each of n warm containers (each has answered one /run), all alive at once."""
    containers = []
    try:
        for _ in range(n):
            c = Container(image, source, cpuset_cpus=cpuset_cpus)
            containers.append(c)
            c.start()
        time.sleep(settle_s)
        for c in containers:
            c.run()  # all still answer
        return [c.memory_bytes() / 1024.0 for c in containers]
    finally:
        for c in containers:
            c.remove()


def memory_per_container_kib(image, source, n=10, cpuset_cpus=None):
    """Mean KiB per warm container with n of them alive."""
    samples = memory_samples_kib(image, source, n, cpuset_cpus=cpuset_cpus)
    return sum(samples) / len(samples)


def percentile(samples, p):
    """Linear-interpolated percentile (p in 0..100) of a non-empty list."""
    xs = sorted(samples)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(samples, digits=2):
    return {
        "median": round(percentile(samples, 50), digits),
        "p10": round(percentile(samples, 10), digits),
        "p90": round(percentile(samples, 90), digits),
        "min": round(min(samples), digits),
        "max": round(max(samples), digits),
        "n": len(samples),
        "samples": [round(s, digits) for s in samples],
    }


def image_info(image):
    out = docker("image", "inspect", "--format", "{{.Id}} {{.Size}}", image).split()
    return {"id": out[0], "size_bytes": int(out[1])}


def measure(image, language, rounds=10, warm_runs=20, containers=0, cpuset_cpus=None, progress=None):
    """The CLI's report: cold starts (with phases), warm runs and, when containers > 0, memory."""
    source = SOURCES[language]
    info = image_info(image)
    report = {"image": image, "image_id": info["id"], "image_size_bytes": info["size_bytes"],
              "language": language, "expected_result": EXPECTED}  # fmt: skip
    phases = {"run": [], "inspect": [], "init": [], "run1": []}
    for i in range(rounds):
        one = cold_start(image, source, cpuset_cpus)
        for key, value in one["phases_ms"].items():
            phases[key].append(value)
        if progress:
            progress(f"cold start {i + 1}/{rounds}: {one['phases_ms']['run1']:.1f} ms")
    report["result"] = one["result"] if rounds else None
    if rounds:
        report["cold_start_ms"] = summary(phases["run1"])
        report["phases_ms"] = {
            "docker_run": summary(phases["run"]),
            "docker_inspect": summary([b - a for a, b in zip(phases["run"], phases["inspect"])]),
            "init": summary([b - a for a, b in zip(phases["inspect"], phases["init"])]),
            "first_run": summary([b - a for a, b in zip(phases["init"], phases["run1"])]),
        }
    if warm_runs:
        report["warm_run_ms"] = summary(warm_run_ms(image, source, warm_runs, cpuset_cpus), 3)
    if containers:
        samples = memory_samples_kib(image, source, containers, cpuset_cpus=cpuset_cpus)
        report["memory_kib"] = summary(samples, 0)
        report["memory_kib"]["mean"] = round(sum(samples) / len(samples))
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", required=True, help="e.g. owwasm-baseline/action-nodejs")
    parser.add_argument("--language", required=True, choices=sorted(SOURCES))
    parser.add_argument("--rounds", type=int, default=10, help="cold starts (default 10)")
    parser.add_argument("--warm-runs", type=int, default=20, help="/runs on one warm container (default 20)")
    parser.add_argument("--containers", type=int, default=0,
                        help="measure memory with this many warm containers at once (default 0: not)")  # fmt: skip
    parser.add_argument("--cpuset-cpus", help="docker run --cpuset-cpus (as the load generator may)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    progress = None if args.quiet else (lambda m: print(f"coldstart.py: {m}", file=sys.stderr))
    try:
        report = measure(args.image, args.language, args.rounds, args.warm_runs, args.containers,
                         args.cpuset_cpus, progress)  # fmt: skip
    except RuntimeError_ as error:
        print(f"coldstart.py: error: {error}", file=sys.stderr)
        return 1
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

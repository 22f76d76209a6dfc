#!/usr/bin/env python3
"""An I/O-bound action in JavaScript and Python on the executor, side by side with OpenWhisk's
own nodejs and python runtimes in Docker, in one run.

Each activation GETs a local HTTP server that answers after --delay-ms (a slow backend or
database) and returns the status and the body's length. For each platform, language and
concurrency C (--concurrency, e.g. 1,16): C warm containers of the action, each driven by a
client of its own in a closed loop on a kept-alive connection for --seconds (OpenWhisk sends
one activation at a time to a container, so C activations at once need C containers). Figures:

  throughput        activations per second, and as a share of the ideal C / delay
  latency           median and p90 of /run, client side
  CPU per activation  the executor process's CPU time (user + system, /proc) over the
                    activations; for Docker, the runtime containers' cgroup CPU time over the
                    activations (dockerd and containerd are not counted, to Docker's favour)

The server listens on the docker0 gateway with --docker (the address the invoker gives runtime
containers as __OW_API_HOST), else on loopback; the executor reaches it through --net-allow and
the action's `net_access` annotation, the runtimes through the bridge. Every answer is checked.
Writes results.json and summary.md.

  eval/engines_io.py [--backends wasmtime] [--languages js,py] [--concurrency 1,16]
                     [--delay-ms 50] [--seconds 5] [--docker] [--out eval/results/engines-io]
"""
import argparse
import http.client
import http.server
import json
import os
import pathlib
import socketserver
import statistics
import sys
import threading
import time

import engines

REPO = engines.REPO
BODY = b"x" * 1024
SOURCES = {
    "js": """
// GET params.url and report what came back (node's fetch in Docker, the executor's fetch here).
async function main(params) {
    const response = await fetch(params.url);
    const body = await response.text();
    return { status: response.status, bytes: body.length };
}
""",
    "py": """
# GET params.url and report what came back: through the executor's helper on the executor,
# with urllib in OpenWhisk's python runtime.
try:
    import openwhisk_http

    def get(url):
        response = openwhisk_http.get(url)
        return response.status, response.content
except ImportError:
    import urllib.request

    def get(url):
        with urllib.request.urlopen(url) as response:
            return response.status, response.read()


def main(params):
    status, body = get(params["url"])
    return {"status": status, "bytes": len(body)}
""",
}
EXPECTED = {"status": 200, "bytes": len(BODY)}


class SlowBackend(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """Answers every GET with BODY after `delay` seconds, one thread per connection."""

    daemon_threads = True

    def __init__(self, host, delay):
        self.delay = delay
        super().__init__((host, 0), SlowHandler)


class SlowHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The header and the body go out in two writes: without this, a client that delays its
    # ACKs (node's) waits 40 ms for the body.
    disable_nagle_algorithm = True

    def do_GET(self):  # noqa: N802 (the standard library's name)
        time.sleep(self.server.delay)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


def closed_loop(targets, params, seconds):
    """One client per (host, port, path) target, each sending /run after /run for `seconds`:
    (latencies in ms, activations, elapsed seconds). Any other answer than EXPECTED raises."""
    latencies, errors = [], []
    lock = threading.Lock()
    start = threading.Barrier(len(targets) + 1)

    def client(host, port, path):
        conn = http.client.HTTPConnection(host, port, timeout=60)
        body = json.dumps({"value": params})
        mine = []
        try:
            start.wait()
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                answer = response.read()
                mine.append((time.perf_counter() - t0) * 1000)
                if response.status != 200 or json.loads(answer) != EXPECTED:
                    raise RuntimeError(f"{path}: {response.status} {answer[:300]!r}")
        except Exception as error:  # noqa: BLE001 (reported below)
            with lock:
                errors.append(error)
        finally:
            conn.close()
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=client, args=t) for t in targets]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"{len(errors)} clients failed, the first: {errors[0]}")
    return latencies, len(latencies), elapsed


def figures(latencies, count, elapsed, cpu_s, concurrency, delay):
    ordered = sorted(latencies)
    rate = count / elapsed
    return {"activations": count, "per_s": rate, "of_ideal": rate / (concurrency / delay),
            "median_ms": statistics.median(ordered), "p90_ms": ordered[(len(ordered) * 9) // 10],
            "cpu_ms_per_activation": cpu_s * 1000 / count}


def process_cpu_s(pid):
    """User + system CPU seconds of a process so far."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def container_cpu_s(cid):
    """CPU seconds of a container's cgroup so far (cgroup v2 or v1)."""
    for path, scale in ((f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cpu.stat", 1e-6),
                        (f"/sys/fs/cgroup/docker/{cid}/cpu.stat", 1e-6),
                        (f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage", 1e-9)):
        try:
            text = pathlib.Path(path).read_text()
        except OSError:
            continue
        if path.endswith("cpu.stat"):
            usage = next(line.split()[1] for line in text.splitlines()
                         if line.startswith("usage_usec"))
            return int(usage) * scale
        return int(text) * scale
    raise RuntimeError(f"cannot read the CPU time of container {cid[:12]}")


def measure_executor(backend, languages, levels, url, delay, seconds, work):
    ex = engines.Executor(backend, work, languages,
                          extra=["--net-allow", url.split("/")[2]])
    results = {}
    values = {lang: {"kind": engines.LANGUAGES[lang]["kind"], "binary": False,
                     "code": SOURCES[lang], "annotations": {"net_access": True}}
              for lang in languages}
    try:
        # Every engine loaded (the executor loads them in the background as it starts) before
        # anything is timed, so that no compile falls into a row's CPU time.
        for lang, value in values.items():
            engines.cold(ex, f"load-{lang}", value, {"url": url})
        for lang, value in values.items():
            for c in levels:
                ids = [f"io-{lang}-{c}-{i}" for i in range(c)]
                for cid in ids:
                    engines.cold(ex, cid, value, {"url": url})
                before = process_cpu_s(ex.process.pid)
                latencies, count, elapsed = closed_loop(
                    [("127.0.0.1", ex.port, f"/{cid}/run") for cid in ids], {"url": url}, seconds)
                cpu = process_cpu_s(ex.process.pid) - before
                results[f"{lang}-io-c{c}"] = figures(latencies, count, elapsed, cpu, c, delay)
                for cid in ids:
                    ex.request("POST", f"/{cid}/destroy")
        return results
    finally:
        ex.stop()


def measure_docker(languages, levels, url, delay, seconds):
    runtimes = engines.docker_runtimes()
    results = {}
    for lang in languages:
        for c in levels:
            containers = [runtimes.Container(engines.DOCKER_IMAGES[lang], SOURCES[lang],
                                             params={"url": url}, expected=EXPECTED)
                          for _ in range(c)]
            try:
                for container in containers:
                    container.start()
                before = sum(container_cpu_s(k.id) for k in containers)
                latencies, count, elapsed = closed_loop(
                    [(k.ip, runtimes.PROXY_PORT, "/run") for k in containers], {"url": url},
                    seconds)
                cpu = sum(container_cpu_s(k.id) for k in containers) - before
                results[f"{lang}-io-c{c}"] = figures(latencies, count, elapsed, cpu, c, delay)
            finally:
                for container in containers:
                    container.remove()
    return results


def write_summary(results, out):
    lines = ["| platform | figure | activations/s | of ideal | median | p90 | CPU per activation |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for platform, rows in results["platforms"].items():
        for figure, f in rows.items():
            lines.append(f"| {platform} | {figure} | {f['per_s']:.0f} | {f['of_ideal']:.0%} | "
                         f"{f['median_ms']:.1f} ms | {f['p90_ms']:.1f} ms | "
                         f"{f['cpu_ms_per_activation']:.2f} ms |")
    machine = results["machine"]
    lines += ["", f"Load average before and after: {machine['load_avg']} → "
              f"{machine.get('load_avg_after')}; {results['seconds']} s per row, "
              f"backend answering after {results['delay_ms']} ms, client-side latencies on "
              "loopback (the bridge for Docker)."]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="wasmtime")
    parser.add_argument("--languages", default="js,py")
    parser.add_argument("--concurrency", default="1,16")
    parser.add_argument("--delay-ms", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--docker", action="store_true",
                        help="also OpenWhisk's nodejs and python runtimes in Docker "
                             "(images of eval/baseline/runtimes/build.sh, on DOCKER_HOST)")
    parser.add_argument("--out", default=str(REPO / "eval" / "results" / "engines-io"))
    args = parser.parse_args()
    languages = args.languages.split(",")
    levels = [int(c) for c in args.concurrency.split(",")]
    delay = args.delay_ms / 1000
    host = engines.docker_runtimes().GATEWAY if args.docker else "127.0.0.1"
    server = SlowBackend(host, delay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://{host}:{server.server_address[1]}/data"

    def measure(backend, _first, work):
        return measure_executor(backend, languages, levels, url, delay, args.seconds, work)

    results = engines.per_backend(args.backends.split(","), "eval-engines-io-", measure,
                                  delay_ms=args.delay_ms, seconds=args.seconds,
                                  concurrency=levels, languages=languages)
    results["platforms"] = dict(results.pop("backends"))
    if args.docker:
        results["platforms"]["docker"] = measure_docker(languages, levels, url, delay,
                                                        args.seconds)
        results["machine"]["load_avg_after"] = os.getloadavg()
    server.shutdown()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    write_summary(results, out)


if __name__ == "__main__":
    main()

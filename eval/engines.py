#!/usr/bin/env python3
"""JavaScript and Python actions on the executor, side by side with a Rust action in one run.

For each backend: an executor with --js-engine and --python-engine (its engines loaded before
anything is timed) and, for each language (js, py), interleaved round by round so that the
machine's noise falls on every row alike:

  L-source      /init of source never seen before, then its first /run
  L-snapshot    /init of the same action pre-initialised ahead of time (wasm-precompile
                snapshot, compiled for the backend), first container of that artifact, then
                its first /run
  L-next        /init of another container of an action already loaded, then its first /run
  rust-next     the same for the Rust action `echo` (portable Wasm, already loaded)
  L-warm        a /run of a warm container of the action
  rust-warm     a /run of a warm `echo` container

and the memory each warm container adds (RSS of the executor after N containers of one
action, less before, over N), for each language's action and for `echo`. Times are the
client's on loopback (an upper bound of the executor's). Writes results.json and summary.md.

  eval/engines.py [--backends wasmtime,wasmer,wamr] [--languages js,py] [--rounds 30]
                  [--containers 100] [--out eval/results/engines]

Needs target/release/wasm-executor-<backend>, wasm-precompile (with wasm-precompile-snapshot and
the backend's precompiler) and actions/dist/{quickjs,python,echo}.wasm.
"""
import argparse
import base64
import http.client
import io
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

REPO = pathlib.Path(__file__).resolve().parent.parent
BIN = REPO / "target" / "release"
DIST = REPO / "actions" / "dist"
# The same small action in each language: a greeting and a table built at the top level.
LANGUAGES = {
    "js": {
        "kind": "nodejs:20", "engine": "quickjs.wasm", "flag": "--js-engine", "suffix": ".js",
        "comment": "//",
        "source": """
const greetings = { en: 'Hello', de: 'Hallo', fr: 'Bonjour' };
const table = Array.from({ length: 200 }, (_, i) => ({ i, square: i * i }));
function main(params) {
    const name = params.name || 'stranger';
    return { greeting: `${greetings[params.lang] || greetings.en}, ${name}!`, rows: table.length };
}
""",
    },
    "py": {
        "kind": "python:3", "engine": "python.wasm", "flag": "--python-engine", "suffix": ".py",
        "comment": "#",
        "source": """
GREETINGS = {"en": "Hello", "de": "Hallo", "fr": "Bonjour"}
TABLE = [{"i": i, "square": i * i} for i in range(200)]
def main(params):
    name = params.get("name", "stranger")
    return {"greeting": f"{GREETINGS.get(params.get('lang'), 'Hello')}, {name}!", "rows": len(TABLE)}
""",
    },
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Executor:
    def __init__(self, backend, work):
        self.port = free_port()
        self.state = pathlib.Path(work) / f"state-{backend}"
        self.log = open(pathlib.Path(work) / f"executor-{backend}.log", "w")
        self.process = subprocess.Popen(
            [str(BIN / f"wasm-executor-{backend}"), "--listen", f"127.0.0.1:{self.port}",
             "--state-dir", str(self.state), "--js-engine", str(DIST / "quickjs.wasm"),
             "--python-engine", str(DIST / "python.wasm"), "--allow-unsigned-artifacts", "--max-containers", "100000"],
            stdout=subprocess.DEVNULL, stderr=self.log, env={**os.environ, "RUST_LOG": "warn"})
        self.conn = None
        for _ in range(600):
            try:
                if self.request("GET", "/health")[0] == 200:
                    return
            except OSError:
                self.conn = None
                time.sleep(0.05)
        raise RuntimeError(f"{backend}: the executor did not start")

    def request(self, method, path, body=None):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        return response.status, response.read().decode()

    def timed(self, method, path, body=None):
        started = time.perf_counter()
        status, text = self.request(method, path, body)
        return status, text, (time.perf_counter() - started) * 1000

    def rss_kib(self):
        for line in open(f"/proc/{self.process.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def expect(status, text, what):
    if status != 200:
        raise RuntimeError(f"{what}: {status} {text}")


def cold(ex, cid, value, params):
    """/init then the first /run: the time until the first result."""
    status, text, init_ms = ex.timed("POST", f"/{cid}/init", {"value": value})
    expect(status, text, f"init {cid}")
    status, text, run_ms = ex.timed("POST", f"/{cid}/run", {"value": params})
    expect(status, text, f"run {cid}")
    return init_ms + run_ms


def artifact_for(backend, language, work):
    """The action pre-initialised ahead of time and compiled for `backend`, zipped."""
    spec = LANGUAGES[language]
    source = pathlib.Path(work) / f"action{spec['suffix']}"
    source.write_text(spec["source"])
    module = pathlib.Path(work) / f"action-{language}.wasm"
    subprocess.run([str(BIN / "wasm-precompile"), "snapshot", str(source), spec["flag"],
                    str(DIST / spec["engine"]), "-o", str(module)], check=True,
                   stdout=subprocess.DEVNULL)
    out = pathlib.Path(work) / f"action-{language}-{backend}.zip"
    subprocess.run([str(BIN / "wasm-precompile"), "compile", "--runtime", backend, "--",
                    str(module), "--zip", "-o", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out.read_bytes()


def marked(zipped, mark):
    """The zip with one more small file: other bytes, so an upload the executor has not seen."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(zipped)) as source, zipfile.ZipFile(buffer, "w") as copy:
        for info in source.infolist():
            copy.writestr(info, source.read(info))
        copy.writestr("round.txt", mark)
    return base64.b64encode(buffer.getvalue()).decode()


def summary(samples):
    ordered = sorted(samples)
    return {"n": len(ordered), "median_ms": statistics.median(ordered),
            "p10_ms": ordered[len(ordered) // 10], "p90_ms": ordered[(len(ordered) * 9) // 10]}


def measure(backend, languages, rounds, containers, work):
    artifacts = {lang: artifact_for(backend, lang, work) for lang in languages}
    echo = base64.b64encode((DIST / "echo.wasm").read_bytes()).decode()
    actions = {lang: {"kind": LANGUAGES[lang]["kind"], "binary": False,
                      "code": LANGUAGES[lang]["source"]} for lang in languages}
    ex = Executor(backend, work)
    try:
        # The engines are loaded (and each action's first container made) before timing.
        for lang, value in actions.items():
            cold(ex, f"warm-{lang}", value, {"name": "Ada"})
        cold(ex, "warm-echo", {"binary": True, "code": echo}, {"x": 1})
        rows = [f"{lang}-{row}" for lang in languages for row in ("source", "snapshot", "next")]
        rows += ["rust-next"] + [f"{lang}-warm" for lang in languages] + ["rust-warm"]
        samples = {k: [] for k in rows}
        for r in range(rounds):
            # Warm rows first: on wasmer the first activation after a large artifact is loaded
            # (the Python snapshot) pays for it, and that falls on a cold row of the round.
            warm = [(f"warm-{lang}", f"{lang}-warm") for lang in languages]
            for cid, key in warm + [("warm-echo", "rust-warm")]:
                status, text, ms = ex.timed("POST", f"/{cid}/run", {"value": {"name": "Ada"}})
                expect(status, text, f"warm {cid}")
                samples[key].append(ms)
            made = []
            for lang, value in actions.items():
                comment = LANGUAGES[lang]["comment"]
                unique = dict(value, code=f"{comment} round {r}\n{value['code']}")
                samples[f"{lang}-source"].append(cold(ex, f"src-{lang}{r}", unique, {"name": "Ada"}))
                # The artifact in a zip of other bytes each round: an upload never seen before.
                snapshot = {"kind": "wasm:0.1", "binary": True,
                            "code": marked(artifacts[lang], str(r))}
                samples[f"{lang}-snapshot"].append(cold(ex, f"snap-{lang}{r}", snapshot, {"name": "Ada"}))
                samples[f"{lang}-next"].append(cold(ex, f"next-{lang}{r}", value, {"name": "Ada"}))
                made += [f"src-{lang}{r}", f"snap-{lang}{r}", f"next-{lang}{r}"]
            samples["rust-next"].append(cold(ex, f"echo{r}", {"binary": True, "code": echo}, {"x": r}))
            for cid in made + [f"echo{r}"]:
                ex.request("POST", f"/{cid}/destroy")
        results = {k: summary(v) for k, v in samples.items()}
        memory = {}
        for name, value in list(actions.items()) + [("rust", {"binary": True, "code": echo})]:
            before = ex.rss_kib()
            for i in range(containers):
                status, text = ex.request("POST", f"/mem-{name}-{i}/init", {"value": value})
                expect(status, text, f"init mem-{name}-{i}")
                status, text = ex.request("POST", f"/mem-{name}-{i}/run", {"value": {"name": "x"}})
                expect(status, text, f"run mem-{name}-{i}")
            memory[name] = {"containers": containers,
                            "kib_per_container": (ex.rss_kib() - before) / containers}
            for i in range(containers):
                ex.request("POST", f"/mem-{name}-{i}/destroy")
        results["memory"] = memory
        return results
    finally:
        ex.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="wasmtime")
    parser.add_argument("--languages", default="js,py")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--containers", type=int, default=100)
    parser.add_argument("--out", default=str(REPO / "eval" / "results" / "engines"))
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="eval-engines-")
    try:
        results = {"machine": {"load_avg": os.getloadavg(), "cpus": os.cpu_count()},
                   "rounds": args.rounds, "backends": {}}
        for backend in args.backends.split(","):
            print(f"== {backend}", file=sys.stderr)
            results["backends"][backend] = measure(backend, args.languages.split(","), args.rounds,
                                                   args.containers, work)
        results["machine"]["load_avg_after"] = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = ["| backend | figure | median | p10 | p90 |", "|---|---|---:|---:|---:|"]
    for backend, figures in results["backends"].items():
        for name, s in figures.items():
            if name == "memory":
                continue
            lines.append(f"| {backend} | {name} | {s['median_ms']:.2f} ms | {s['p10_ms']:.2f} ms | "
                         f"{s['p90_ms']:.2f} ms |")
        for name, m in figures["memory"].items():
            lines.append(f"| {backend} | memory per warm {name} container ({m['containers']}) | "
                         f"{m['kib_per_container']:.0f} KiB | | |")
    lines.append("")
    lines.append(f"Load average before and after: {results['machine']['load_avg']} → "
                 f"{results['machine']['load_avg_after']}; {args.rounds} rounds, client-side "
                 "times on loopback (/init + first /run for the cold rows).")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""JavaScript and Python actions on the executor, side by side with a Rust action in one run.

For each backend: an executor with --js-engine and --python-engine (its engines loaded before
anything is timed) and, for each language (js, py), interleaved round by round so that the
machine's noise falls on every row alike:

  L-source      /init of source never seen before, then its first /run (also the executor's
                own time for them, from the sums of its /metrics latency histograms)
  L-state       /init of the same action pre-initialised ahead of time into its state file
                (wasm-precompile snapshot), first container of that file, then its first /run
                (also the executor's own time)
  L-snapshot    the same with the engine and the state as one module (wasm-precompile
                snapshot --module, compiled for the backend), first container of that
                artifact, then its first /run
  L-next        /init of another container of an action already loaded, then its first /run
  rust-next     the same for the Rust action `echo` (portable Wasm, already loaded)
  L-warm        a /run of a warm container of the action, right after an untimed one (also
                the executor's own time)
  rust-warm     a /run of a warm `echo` container (also the executor's own time)

and the memory each warm container adds (RSS of the executor after N containers of one
action, less before, over N), for each language's action and for `echo`. With --docker, the
same actions on OpenWhisk's own runtimes in Docker (the images of eval/baseline/runtimes/build.sh,
started as the invoker starts them, eval/baseline/runtimes/coldstart.py) in the same rounds of
the first backend:

  L-docker      `docker run` of a fresh runtime container, /init, first /run
  L-docker-warm a /run of a warm runtime container

and the cgroup memory of each of min(N, 20) warm runtime containers. A round pauses after its
Docker cold starts, so that what Docker does after a container is removed (dockerd, containerd
and the kernel tearing down its namespaces) does not fall on the next round's rows. Times are the
client's on loopback (an upper bound of the executor's; request bodies are encoded before the
clock starts). Writes results.json and summary.md.

  eval/engines.py [--backends wasmtime,wasmer,wamr] [--languages js,py] [--rounds 30]
                  [--containers 100] [--docker] [--out eval/results/engines]

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
    def __init__(self, backend, work, languages=tuple(LANGUAGES), extra=()):
        self.port = free_port()
        self.state = pathlib.Path(work) / f"state-{backend}"
        self.log = open(pathlib.Path(work) / f"executor-{backend}.log", "w")
        engines = [arg for lang in languages
                   for arg in (LANGUAGES[lang]["flag"], str(DIST / LANGUAGES[lang]["engine"]))]
        self.process = subprocess.Popen(
            [str(BIN / f"wasm-executor-{backend}"), "--listen", f"127.0.0.1:{self.port}",
             "--state-dir", str(self.state), *engines, "--allow-unsigned-artifacts",
             "--max-containers", "100000", *extra],
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
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        reused = self.conn is not None
        try:
            return self.exchange(method, path, data)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # A kept-alive connection the executor closed while idle: once more on a new one.
            self.conn = None
            if not reused:
                raise
            return self.exchange(method, path, data)

    def exchange(self, method, path, data):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        return response.status, response.read().decode()

    def timed(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        started = time.perf_counter()
        status, text = self.request(method, path, data)
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


def executor_ms(ex):
    """The executor's own time in /inits and /runs so far (the sums of its latency histograms)."""
    status, text = ex.request("GET", "/metrics")
    expect(status, text, "metrics")
    sums = [float(line.split()[-1]) for line in text.splitlines()
            if line.startswith(("wasm_executor_init_duration_seconds_sum",
                                "wasm_executor_run_duration_seconds_sum"))]
    return sum(sums) * 1000


def cold_both(ex, cid, value, params):
    """`cold`, and the executor's own share of it."""
    before = executor_ms(ex)
    client = cold(ex, cid, value, params)
    return client, executor_ms(ex) - before


def snapshot_of(language, work, *form):
    """`wasm-precompile snapshot` of the language's action: its output file."""
    spec = LANGUAGES[language]
    source = pathlib.Path(work) / f"action{spec['suffix']}"
    source.write_text(spec["source"])
    out = pathlib.Path(work) / (f"action-{language}.wasm" if form else f"action-{language}.state")
    subprocess.run([str(BIN / "wasm-precompile"), "snapshot", str(source), spec["flag"],
                    str(DIST / spec["engine"]), *form, "-o", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def state_zip(state, mark):
    """The state file zipped (stored, as wasm-precompile zips it) under a name of its own: other
    bytes, so an upload the executor has not seen."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{mark}.snapshot", state)
    return base64.b64encode(buffer.getvalue()).decode()


def compiled(backend, module, work):
    """`module` (a path) compiled for `backend` by wasm-precompile, zipped: its bytes."""
    out = pathlib.Path(work) / f"{pathlib.Path(module).stem}-{backend}.zip"
    subprocess.run([str(BIN / "wasm-precompile"), "compile", "--runtime", backend, "--",
                    str(module), "--zip", "-o", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out.read_bytes()


def artifact_for(backend, language, work):
    """The action pre-initialised ahead of time as one module and compiled for `backend`,
    zipped."""
    return compiled(backend, snapshot_of(language, work, "--module"), work)


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


# The Docker images of OpenWhisk's own runtimes (eval/baseline/runtimes/build.sh), by language.
DOCKER_IMAGES = {"js": "owwasm-baseline/action-nodejs", "py": "owwasm-baseline/action-python"}
# Most runtime containers kept warm at once for their memory (each may use 256 MB).
DOCKER_MEMORY_CONTAINERS = 20
# Seconds a round waits after its Docker cold starts before the next round's rows.
DOCKER_SETTLE_S = 1.0


def docker_runtimes():
    """eval/baseline/runtimes/coldstart.py, imported."""
    sys.path.insert(0, str(REPO / "eval" / "baseline" / "runtimes"))
    import coldstart
    return coldstart


def measure(backend, languages, rounds, containers, work, docker=False):
    artifacts = {lang: artifact_for(backend, lang, work) for lang in languages}
    states = {lang: snapshot_of(lang, work).read_bytes() for lang in languages}
    echo = base64.b64encode((DIST / "echo.wasm").read_bytes()).decode()
    actions = {lang: {"kind": LANGUAGES[lang]["kind"], "binary": False,
                      "code": LANGUAGES[lang]["source"]} for lang in languages}
    ex = Executor(backend, work, languages)
    try:
        # The engines are loaded (and each action's first container made) before timing.
        for lang, value in actions.items():
            cold(ex, f"warm-{lang}", value, {"name": "Ada"})
        cold(ex, "warm-echo", {"binary": True, "code": echo}, {"x": 1})
        rows = [f"{lang}-{row}" for lang in languages
                for row in ("source", "source (executor side)", "state", "state (executor side)",
                            "snapshot", "next")]
        rows += ["rust-next"] + [f"{row}{side}" for row in [f"{lang}-warm" for lang in languages]
                                 + ["rust-warm"] for side in ("", " (executor side)")]
        runtimes = docker_runtimes() if docker else None
        if runtimes:
            rows += [f"{lang}-docker" for lang in languages]
        samples = {k: [] for k in rows}
        for r in range(rounds):
            # Warm rows first: on wasmer the first activation after a large artifact is loaded
            # (the Python snapshot) pays for it, and that falls on a cold row of the round.
            warm = [(f"warm-{lang}", f"{lang}-warm") for lang in languages]
            warm.append(("warm-echo", "rust-warm"))
            # An untimed /run of each warm container first, as the Docker warm rows run one
            # /run after another: after a pause (the Docker rows' settling) the host of a VM
            # can leave the executor's memory cold, and touching it again costs milliseconds
            # that are the host's (measured here: 8 MiB touched after 1 s idle, 4-5 ms;
            # at once, 0.4 ms).
            for cid, _ in warm:
                status, text = ex.request("POST", f"/{cid}/run", {"value": {"name": "Ada"}})
                expect(status, text, f"warm-up {cid}")
            for cid, key in warm:
                before = executor_ms(ex)
                status, text, ms = ex.timed("POST", f"/{cid}/run", {"value": {"name": "Ada"}})
                expect(status, text, f"warm {cid}")
                samples[key].append(ms)
                samples[f"{key} (executor side)"].append(executor_ms(ex) - before)
            made = []
            for lang, value in actions.items():
                comment = LANGUAGES[lang]["comment"]
                unique = dict(value, code=f"{comment} round {r}\n{value['code']}")
                for row, cold_value in (("source", unique), ("state", {
                        "kind": value["kind"], "binary": True,
                        "code": state_zip(states[lang], f"round{r}")})):
                    client, own = cold_both(ex, f"{row}-{lang}{r}", cold_value, {"name": "Ada"})
                    samples[f"{lang}-{row}"].append(client)
                    samples[f"{lang}-{row} (executor side)"].append(own)
                # The artifact in a zip of other bytes each round: an upload never seen before.
                snapshot = {"kind": "wasm:0.1", "binary": True,
                            "code": marked(artifacts[lang], str(r))}
                samples[f"{lang}-snapshot"].append(cold(ex, f"snap-{lang}{r}", snapshot, {"name": "Ada"}))
                samples[f"{lang}-next"].append(cold(ex, f"next-{lang}{r}", value, {"name": "Ada"}))
                made += [f"source-{lang}{r}", f"state-{lang}{r}", f"snap-{lang}{r}", f"next-{lang}{r}"]
            samples["rust-next"].append(cold(ex, f"echo{r}", {"binary": True, "code": echo}, {"x": r}))
            for lang in languages if runtimes else []:
                samples[f"{lang}-docker"].append(
                    runtimes.cold_start_ms(DOCKER_IMAGES[lang], LANGUAGES[lang]["source"]))
            if runtimes:
                time.sleep(DOCKER_SETTLE_S)
            for cid in made + [f"echo{r}"]:
                ex.request("POST", f"/{cid}/destroy")
        for lang in languages if runtimes else []:
            image, source = DOCKER_IMAGES[lang], LANGUAGES[lang]["source"]
            samples[f"{lang}-docker-warm"] = runtimes.warm_run_ms(image, source, runs=rounds)
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
        for lang in languages if runtimes else []:
            image, source = DOCKER_IMAGES[lang], LANGUAGES[lang]["source"]
            n = min(containers, DOCKER_MEMORY_CONTAINERS)
            memory[f"docker {lang}"] = {
                "containers": n,
                "kib_per_container": runtimes.memory_per_container_kib(image, source, n),
                "image": image, "image_id": runtimes.image_info(image)["id"]}
        results["memory"] = memory
        return results
    finally:
        ex.stop()


def commit_measured():
    """The checkout's commit, marked "-dirty" when files git tracks changed outside eval/results
    (the records, which the earlier of repeated runs write); None outside git."""
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=10", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no",
                                "--", ":/", ":(top,exclude)eval/results"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def per_backend(backends, prefix, measure, **settings):
    """`measure(backend, first, work)` for each backend in turn, in one scratch directory: the
    results as results.json holds them (the machine and its load before and after, `settings`,
    the figures by backend), with the date and the commit measured, for eval/report."""
    results = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "commit": commit_measured(),
               "machine": {"load_avg": os.getloadavg(), "cpus": os.cpu_count()}, **settings,
               "backends": {}}
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        for i, backend in enumerate(backends):
            print(f"== {backend}", file=sys.stderr)
            results["backends"][backend] = measure(backend, i == 0, work)
        results["machine"]["load_avg_after"] = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="wasmtime")
    parser.add_argument("--languages", default="js,py")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--containers", type=int, default=100)
    parser.add_argument("--docker", action="store_true",
                        help="also OpenWhisk's nodejs and python runtimes in Docker "
                             "(images of eval/baseline/runtimes/build.sh, on DOCKER_HOST)")
    parser.add_argument("--out", default=str(REPO / "eval" / "results" / "engines"))
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = per_backend(
        args.backends.split(","), "eval-engines-",
        lambda backend, first, work: measure(backend, args.languages.split(","), args.rounds,
                                             args.containers, work, args.docker and first),
        rounds=args.rounds)
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
    with_docker = [figures for figures in results["backends"].values()
                   if any(name.endswith("-docker") for name in figures)]
    if with_docker:
        docker = with_docker[0]
        lines += ["", "| backend | language | cold start of OpenWhisk's runtime in Docker over the "
                      "executor's: source never seen | state file |", "|---|---|---:|---:|"]
        for backend, figures in results["backends"].items():
            for lang in args.languages.split(","):
                d = docker[f"{lang}-docker"]["median_ms"]
                lines.append(f"| {backend} | {lang} | {d / figures[f'{lang}-source']['median_ms']:.0f}× | "
                             f"{d / figures[f'{lang}-state']['median_ms']:.0f}× |")
    lines.append("")
    lines.append(f"Load average before and after: {results['machine']['load_avg']} → "
                 f"{results['machine']['load_avg_after']}; {args.rounds} rounds, client-side "
                 "times on loopback (/init + first /run for the cold rows).")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

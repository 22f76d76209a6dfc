"""Figures of RESULTS.md's section on actions in JavaScript and Python, and their subsections."""

from report import fmt, records
from report.sections._engines_util import (
    DISPLAY, check, io_figures, jmeter_figures, ms_table, sieve_figures, whole_ratio)

LANGUAGES = ("js", "py")
# Issue 30's targets, on the executor's side: (label, figure of results.json, kind, bound).
# kind "ms" and "kib" are upper bounds, "docker" and "docker-own" are lower bounds on the
# ratio of OpenWhisk's runtime in Docker (client side) over the executor.
TARGETS = [
    ("JavaScript from a state file, executor side", "js-state (executor side)", "ms", 3),
    ("JavaScript from source, executor side", "js-source (executor side)", "ms", 20),
    ("Python from a state file, executor side", "py-state (executor side)", "ms", 10),
    ("Python from source, executor side", "py-source (executor side)", "ms", 100),
    ("warm JavaScript /run, executor side", "js-warm (executor side)", "ms", 0.5),
    ("memory per further warm JavaScript container", "js", "kib", 64),
    ("memory per further warm Python container", "py", "kib", 64),
    ("JavaScript from a state file: Docker's nodejs cold start over the executor's, client side",
     "js-state", "docker", 50),
    ("Python from a state file: Docker's python cold start over the executor's, client side",
     "py-state", "docker", 50),
    ("Python from a state file: Docker's python cold start (client side) over the executor's "
     "own time", "py-state (executor side)", "docker-own", 50),
]


def median(backend, figure):
    return backend[figure]["median_ms"]


def engines_table(backends):
    """The first table of eval/engines.py's summary.md, from results.json."""
    rows = []
    for name, figures in backends.items():
        rows += [[name, figure, ms_table(s["median_ms"]), ms_table(s["p10_ms"]),
                  ms_table(s["p90_ms"])] for figure, s in figures.items() if figure != "memory"]
        rows += [[name, f"memory per warm {kind} container ({m['containers']})",
                  f"{m['kib_per_container']:.0f} KiB", "", ""]
                 for kind, m in figures["memory"].items()]
    return fmt.table(["backend", "figure", "median", "p10", "p90"], rows, right=(2, 3, 4))


def docker_figures(backends):
    """The backend whose rounds include OpenWhisk's runtimes in Docker: its figures."""
    return next(f for f in backends.values() if any(k.endswith("-docker") for k in f))


def ratio_table(backends, docker):
    rows = [[name, lang,
             whole_ratio(median(docker, f"{lang}-docker") / median(f, f"{lang}-source")),
             whole_ratio(median(docker, f"{lang}-docker") / median(f, f"{lang}-state"))]
            for name, f in backends.items() for lang in LANGUAGES]
    header = ["backend", "language", "cold start of OpenWhisk's runtime in Docker over the "
              "executor's: source never seen", "state file"]
    return fmt.table(header, rows, right=(2, 3))


def target_value(figures, docker, figure, kind):
    if kind == "kib":
        return figures["memory"][figure]["kib_per_container"]
    if kind == "ms":
        return median(figures, figure)
    lang = figure[:2]
    return median(docker, f"{lang}-docker") / median(figures, figure)


def met(values, kind, bound):
    """'yes', 'no', or the backends that meet the target."""
    ok = [name for name, v in values.items() if (v >= bound if kind.startswith("docker")
                                                  else v <= bound)]
    if len(ok) == len(values):
        return "yes"
    return ", ".join(DISPLAY.get(n, n) for n in ok) if ok else "no"


def targets_table(backends, docker):
    show = {"ms": fmt.ms, "kib": fmt.kib, "docker": fmt.times, "docker-own": fmt.times}
    bounds = {"ms": lambda b: f"≤ {fmt.ms(b)}", "kib": lambda b: f"≤ {fmt.kib(b)}"}
    rows = []
    for label, figure, kind, bound in TARGETS:
        values = {n: target_value(f, docker, figure, kind) for n, f in backends.items()}
        target = bounds.get(kind, lambda b: f"≥ {fmt.times(b)}")(bound)
        rows.append([label, target, *(show[kind](v) for v in values.values()),
                     met(values, kind, bound)])
    header = ["figure", "target", *(DISPLAY.get(n, n) for n in backends), "met?"]
    return fmt.table(header, rows, right=tuple(range(2, 2 + len(backends))))


def docker_ratios(backends, docker, lang, row):
    return [median(docker, f"{lang}-docker") / median(f, f"{lang}-{row}")
            for f in backends.values()]


def check_engine_claims(backends, docker):
    state = {lang: docker_ratios(backends, docker, lang, "state") for lang in LANGUAGES}
    check(min(state["js"]) >= 50, "the issue's 50× holds for JavaScript from a state file")
    check(max(state["py"]) < 50, "Python from a state file misses 50× client side")
    own = {n: median(docker, "py-docker") / median(f, "py-state (executor side)")
           for n, f in backends.items()}
    check([n for n, v in own.items() if v >= 50] == ["wasmtime"],
          "only wasmtime reaches 50× for Python on the executor's own time")
    source = {n: median(f, "js-source (executor side)") for n, f in backends.items()}
    check(max(source, key=source.get) == "wamr" and source["wamr"] <= 20,
          "WAMR is the slowest at JavaScript from source, yet within the target")
    check(0.5 < median(backends["wasmtime"], "js-warm (executor side)") <= 0.55,
          "wasmtime's warm JavaScript /run is just over the target")
    warm = {n: median(f, "py-warm (executor side)") for n, f in backends.items()}
    check(min(warm, key=warm.get) == "wasmtime", "wasmtime's warm Python /run is the fastest")
    negative = [kind for f in backends.values() for kind, m in f["memory"].items()
                if m["kib_per_container"] < 0]
    check(negative and all(kind == "rust" for kind in negative),
          "the memory rows of Rust's echo are negative")
    docker_kinds = [k for k in docker["memory"] if k.startswith("docker")]
    executor_most = max(m["kib_per_container"] for f in backends.values()
                        for k, m in f["memory"].items() if not k.startswith("docker"))
    check(executor_most < min(docker["memory"][k]["kib_per_container"] for k in docker_kinds),
          "a warm container costs the executor less memory than a runtime container")


def engines_figures():
    record = records.json_of("engines/results.json")
    backends = record["backends"]
    docker = docker_figures(backends)
    check_engine_claims(backends, docker)
    wasmtime = backends["wasmtime"]
    others_py_warm = [median(f, "py-warm (executor side)") for n, f in backends.items()
                      if n != "wasmtime"]
    memory = docker["memory"]
    machine = record["machine"]
    return {
        "table": engines_table(backends),
        "ratio_table": ratio_table(backends, docker),
        "targets_table": targets_table(backends, docker),
        "rounds": str(record["rounds"]),
        "containers": str(wasmtime["memory"]["js"]["containers"]),
        "docker_containers": str(memory["docker js"]["containers"]),
        "load_before": fmt.load(machine["load_avg"]),
        "load_after": fmt.load(machine["load_avg_after"]),
        "js_state_own_wasmtime": fmt.ms(median(wasmtime, "js-state (executor side)")),
        "js_state_x_wasmtime": whole_ratio(median(docker, "js-docker")
                                           / median(wasmtime, "js-state")),
        "js_state_x": fmt.span(docker_ratios(backends, docker, "js", "state"), whole_ratio),
        "js_source_x": fmt.span(docker_ratios(backends, docker, "js", "source"), whole_ratio),
        "py_state_x": fmt.span(docker_ratios(backends, docker, "py", "state"), whole_ratio),
        "py_source_x": fmt.span(docker_ratios(backends, docker, "py", "source"), whole_ratio),
        "py_state_own_wasmtime": fmt.ms(median(wasmtime, "py-state (executor side)")),
        "py_docker": fmt.ms(median(docker, "py-docker")),
        "py_own_x_wasmtime": fmt.times(median(docker, "py-docker")
                                       / median(wasmtime, "py-state (executor side)")),
        "py_state_transfer": fmt.ms(median(wasmtime, "py-state")
                                    - median(wasmtime, "py-state (executor side)")),
        "js_source_own_wamr": fmt.ms(median(backends["wamr"], "js-source (executor side)")),
        "js_warm_own_wasmtime": fmt.ms(median(wasmtime, "js-warm (executor side)")),
        "py_warm_own_wasmtime": fmt.ms(median(wasmtime, "py-warm (executor side)")),
        "py_warm_own_others": fmt.span(others_py_warm, fmt.ms),
        "docker_js_memory": fmt.mib(memory["docker js"]["kib_per_container"] / 1024),
        "docker_py_memory": fmt.mib(memory["docker py"]["kib_per_container"] / 1024),
    }


def figures():
    return {**engines_figures(), **io_figures(), **jmeter_figures(), **sieve_figures()}

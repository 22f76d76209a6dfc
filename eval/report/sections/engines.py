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
RUNS = "engines/run-*/results.json"


def median(backend, figure):
    return backend[figure]["median_ms"]


def run_backends(run):
    return records.json_of(run)["backends"]


def mean_backends(runs):
    """The runs' figures in one run's shape, each median and each memory figure the mean of the
    runs' (so the targets and the prose read the means)."""
    averaged = {}
    for name, figures in run_backends(runs[0]).items():
        averaged[name] = {fig: {"median_ms": fmt.mean([median(run_backends(r)[name], fig) for r in runs])}
                          for fig in figures if fig != "memory"}
        averaged[name]["memory"] = {
            kind: dict(m, kib_per_container=fmt.mean(
                [run_backends(r)[name]["memory"][kind]["kib_per_container"] for r in runs]))
            for kind, m in figures["memory"].items()}
    return averaged


def docker_of(backends):
    """The backend whose rounds include OpenWhisk's runtimes in Docker: its figures."""
    return next(f for f in backends.values() if any(k.endswith("-docker") for k in f))


def docker_ratios(runs, name, lang, figure):
    """OpenWhisk's runtime's cold start in Docker over one backend's figure, run by run."""
    ratios = []
    for run in runs:
        backends = run_backends(run)
        ratios.append(median(docker_of(backends), f"{lang}-docker") / median(backends[name], figure))
    return ratios


def mean_ratio(runs, name, lang, figure):
    return fmt.mean(docker_ratios(runs, name, lang, figure))


def engines_table(runs):
    """Each row's median in each run, and their mean with its 95 % interval across the runs."""
    rows = []
    for name, figures in run_backends(runs[0]).items():
        for figure in figures:
            if figure == "memory":
                continue
            values = [median(run_backends(r)[name], figure) for r in runs]
            rows.append([name, figure, *(ms_table(v) for v in values),
                         fmt.mean_and_interval(values, ms_table)])
        for kind, m in figures["memory"].items():
            values = [run_backends(r)[name]["memory"][kind]["kib_per_container"] for r in runs]
            rows.append([name, f"memory per warm {kind} container ({m['containers']})",
                         *(f"{v:.0f} KiB" for v in values), f"{fmt.mean(values):.0f} KiB"])
    header = ["backend", "figure", *(f"run {i}: median" for i in range(1, len(runs) + 1)),
              "mean [95 % interval across runs]"]
    return fmt.table(header, rows, right=tuple(range(2, len(runs) + 3)))


def ratio_table(runs):
    rows = [[name, lang, *(fmt.mean_and_interval(docker_ratios(runs, name, lang, f"{lang}-{row}"),
                                                 whole_ratio) for row in ("source", "state"))]
            for name in run_backends(runs[0]) for lang in LANGUAGES]
    header = ["backend", "language", "cold start of OpenWhisk's runtime in Docker over the "
              "executor's: source never seen", "state file"]
    return fmt.table(header, rows, right=(2, 3))


def target_value(runs, backends, name, figure, kind):
    if kind == "kib":
        return backends[name]["memory"][figure]["kib_per_container"]
    if kind == "ms":
        return median(backends[name], figure)
    return mean_ratio(runs, name, figure[:2], figure)


def met(values, kind, bound):
    """'yes', 'no', or the backends that meet the target."""
    ok = [name for name, v in values.items() if (v >= bound if kind.startswith("docker")
                                                  else v <= bound)]
    if len(ok) == len(values):
        return "yes"
    return ", ".join(DISPLAY.get(n, n) for n in ok) if ok else "no"


def targets_table(runs, backends):
    show = {"ms": fmt.ms, "kib": fmt.kib, "docker": fmt.times, "docker-own": fmt.times}
    bounds = {"ms": lambda b: f"≤ {fmt.ms(b)}", "kib": lambda b: f"≤ {fmt.kib(b)}"}
    rows = []
    for label, figure, kind, bound in TARGETS:
        values = {n: target_value(runs, backends, n, figure, kind) for n in backends}
        target = bounds.get(kind, lambda b: f"≥ {fmt.times(b)}")(bound)
        rows.append([label, target, *(show[kind](v) for v in values.values()),
                     met(values, kind, bound)])
    header = ["figure", "target", *(DISPLAY.get(n, n) for n in backends), "met?"]
    return fmt.table(header, rows, right=tuple(range(2, 2 + len(backends))))


def runtime_ratios(runs, backends, lang, row="state"):
    """Each backend's mean ratio of OpenWhisk's runtime's cold start over its `lang-row`."""
    return [mean_ratio(runs, n, lang, f"{lang}-{row}") for n in backends]


def check_engine_claims(runs, backends):
    state = {lang: runtime_ratios(runs, backends, lang) for lang in LANGUAGES}
    check(min(state["js"]) >= 50, "the issue's 50× holds for JavaScript from a state file")
    docker = docker_of(backends)
    docker_kinds = [k for k in docker["memory"] if k.startswith("docker")]
    executor_most = max(m["kib_per_container"] for f in backends.values()
                        for k, m in f["memory"].items() if not k.startswith("docker"))
    check(executor_most < min(docker["memory"][k]["kib_per_container"] for k in docker_kinds),
          "a warm container costs the executor less memory than a runtime container")


def py_state_verdict(runs, backends):
    """Whether the issue's 50× holds for Python from a state file (JavaScript's is checked)."""
    ratios = dict(zip(backends, runtime_ratios(runs, backends, "py")))
    holding = [DISPLAY.get(n, n) for n, ratio in ratios.items() if ratio >= 50]
    if len(holding) == len(ratios):
        return "The issue's 50× holds for both languages from a state file."
    if not holding:
        return "The issue's 50× holds for JavaScript, not for Python from a state file."
    return ("The issue's 50× holds for JavaScript, and for Python from a state file on "
            f"{', '.join(holding)}.")


def upper_bound(figure):
    """Issue 30's upper bound in ms on `figure`."""
    return next(b for _, f, kind, b in TARGETS if f == figure and kind == "ms")


def verdict_of_all(backends, figure):
    """'within the target on every backend', or the backends over it."""
    bound = upper_bound(figure)
    over = [DISPLAY.get(n, n) for n, f in backends.items() if median(f, figure) > bound]
    if not over:
        return "within the target on every backend"
    return f"over the target of {fmt.ms(bound)} on {', '.join(over)}"


def engines_figures():
    runs = records.repeated(RUNS)
    backends = mean_backends(runs)
    check_engine_claims(runs, backends)
    wasmtime = backends["wasmtime"]
    docker = docker_of(backends)
    engine_memory = [f["memory"][lang]["kib_per_container"] for f in backends.values()
                     for lang in LANGUAGES]

    def each_backend(figure, unit=fmt.ms):
        return ", ".join(unit(median(f, figure)) for f in backends.values())
    memory = docker["memory"]
    first = records.json_of(runs[0])
    loads = [records.json_of(r)["machine"] for r in runs]
    return {
        "runs": str(len(runs)),
        "date": first["date_utc"][:10],
        "commit": first["commit"],
        "loads": "; ".join(f"{fmt.load(m['load_avg'])} → {fmt.load(m['load_avg_after'])}"
                           for m in loads),
        "table": engines_table(runs),
        "ratio_table": ratio_table(runs),
        "targets_table": targets_table(runs, backends),
        "rounds": str(first["rounds"]),
        "containers": str(wasmtime["memory"]["js"]["containers"]),
        "docker_containers": str(memory["docker js"]["containers"]),
        "js_state_x": fmt.span(runtime_ratios(runs, backends, "js"), whole_ratio),
        "js_source_x": fmt.span(runtime_ratios(runs, backends, "js", "source"), whole_ratio),
        "py_state_x": fmt.span(runtime_ratios(runs, backends, "py"), whole_ratio),
        "py_source_x": fmt.span(runtime_ratios(runs, backends, "py", "source"), whole_ratio),
        "py_docker": fmt.ms(median(docker, "py-docker")),
        "py_state_verdict": py_state_verdict(runs, backends),
        "py_state_transfer": fmt.ms(median(wasmtime, "py-state")
                                    - median(wasmtime, "py-state (executor side)")),
        "js_source_own_all": each_backend("js-source (executor side)"),
        "js_warm_verdict": verdict_of_all(backends, "js-warm (executor side)"),
        "js_source_verdict": verdict_of_all(backends, "js-source (executor side)"),
        "py_warm_own_all": each_backend("py-warm (executor side)"),
        "js_warm_own_all": each_backend("js-warm (executor side)"),
        "rust_warm_own_all": each_backend("rust-warm (executor side)"),
        "py_own_x_all": ", ".join(
            fmt.times(mean_ratio(runs, n, "py", "py-state (executor side)")) for n in backends),
        "engine_memory": f"between {min(engine_memory):.0f} and {max(engine_memory):.0f} KiB",
        "docker_js_memory": fmt.mib(memory["docker js"]["kib_per_container"] / 1024),
        "docker_py_memory": fmt.mib(memory["docker py"]["kib_per_container"] / 1024),
    }


def figures():
    return {**engines_figures(), **io_figures(), **jmeter_figures(), **sieve_figures()}

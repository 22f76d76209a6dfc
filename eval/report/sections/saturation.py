"""Figures of the saturation section: cold starts/s, /init, concurrency limits, each from
repeated runs on one build."""

from report import fmt, records
from report.sections import _evaluation_util as ev
from report.sections import _saturation_util as util

DOCKER = "docker"
# Issue 14's targets (constants, not measurements).
COLD_RATE_TARGET = 20
SHARED_INIT_TARGET_MS = 0.2
INIT_SCENARIOS = ("precompiled_new", "precompiled_shared", "portable_cached", "portable_compile")


# ------------------------------------------------------------------ 10: cold starts at saturation
COLD_RUNS = "cold-rate/run-*/summary.json"


def cold_runs():
    return records.repeated(COLD_RUNS)


def cold_cells(run):
    """{(platform, clients): cell} of experiment 10 in one run."""
    return {(c["platform"], c["level"]): c
            for c in records.json_of(run)["summary"]["cells"]["cold-rate"] if c["scenario"] == "echo"}


def cold_levels(run):
    return sorted({level for _, level in cold_cells(run)})


def cold_order(run):
    """The executor builds of the cold-rate runs, then Docker."""
    return [p for p in records.json_of(run)["platforms"] if p != DOCKER] + [DOCKER]


def peak(run, platform):
    """A run's highest rate of one platform over the levels, as a cell."""
    return max((c for (p, _), c in cold_cells(run).items() if p == platform),
               key=lambda c: c["rate"])


def cold_table(runs):
    """Per level: each platform's cold starts/s as mean [95 % interval across runs] and the
    mean p50 in brackets; each executor's rate over Docker's, mean of the runs' ratios."""
    first = runs[0]
    order = cold_order(first)
    executors = order[:-1]
    rows = []
    for level in cold_levels(first):
        row = [str(level)]
        for p in order:
            rates = [cold_cells(r)[(p, level)]["rate"] for r in runs]
            p50 = mean_cell(runs, p, level, "p50_ms")
            row.append(f"{fmt.mean_and_interval(rates, fmt.number)} ({fmt.fixed(p50, 1)})")
        row += [fmt.times(fmt.mean([cold_cells(r)[(p, level)]["rate"] / cold_cells(r)[(DOCKER, level)]["rate"]
                                for r in runs])) for p in executors]
        rows.append(row)
    header = ["clients"] + [ev.name(p) for p in order] + [f"{ev.name(p)} / Docker" for p in executors]
    return fmt.table(header, rows)


def peak_table(runs):
    """Each run's peak per platform and each executor's peak over Docker's, with the mean."""
    order = cold_order(runs[0])
    rows = []
    for p in order:
        values = [peak(r, p)["rate"] for r in runs]
        rows.append([f"{ev.name(p)}: peak cold starts/s", *(fmt.number(v) for v in values),
                     fmt.mean_and_interval(values, fmt.number)])
    for p in order[:-1]:
        values = peak_ratios(runs, p)
        rows.append([f"{ev.name(p)}: its peak over Docker's", *(fmt.times(v) for v in values),
                     fmt.mean_and_interval(values, fmt.times)])
    header = ["figure", *(f"run {i}" for i in range(1, len(runs) + 1)),
              "mean [95 % interval across runs]"]
    return fmt.table(header, rows, right=tuple(range(1, len(runs) + 2)))


def peak_ratios(runs, platform):
    return [peak(r, platform)["rate"] / peak(r, DOCKER)["rate"] for r in runs]


def mean_cell(runs, platform, level, key):
    return fmt.mean([cold_cells(r)[(platform, level)][key] for r in runs])


def docker_queueing(runs):
    """Guards 'Docker's peak comes at N clients; beyond, its starts queue and its rate falls'."""
    levels = cold_levels(runs[0])
    rates = {level: mean_cell(runs, DOCKER, level, "rate") for level in levels}
    top = max(rates, key=rates.get)
    p50s = [mean_cell(runs, DOCKER, level, "p50_ms") for level in levels]
    if top == levels[-1] or p50s != sorted(p50s):
        raise ValueError(f"the prose says Docker peaks before {levels[-1]} clients and its "
                         f"start latency grows with the clients; the runs' means say peak at "
                         f"{top}, p50s {p50s}")
    return top


def cold_figures():
    runs = cold_runs()
    first = records.json_of(runs[0])
    executors = cold_order(runs[0])[:-1]
    peaks = {p: fmt.mean([peak(r, p)["rate"] for r in runs]) for p in executors + [DOCKER]}
    ratios = {p: peak_ratios(runs, p) for p in executors}
    lows = {p: fmt.mean(v) - fmt.across(v)[1] for p, v in ratios.items()}
    if min(fmt.mean(v) for v in ratios.values()) < COLD_RATE_TARGET:
        raise ValueError(f"the prose says the target ≥ {COLD_RATE_TARGET}× is met on the mean; "
                         f"the means are {ratios}")
    levels = cold_levels(runs[0])
    top_level = levels[-1]
    errors = sum(c["errors"] for r in runs for c in cold_cells(r).values())
    if errors:
        raise ValueError(f"experiment 10 had {errors} errors; the prose does not say so")
    below = [ev.name(p) for p in executors if lows[p] < COLD_RATE_TARGET]
    sizes = first["sizes"]
    return {
        "cold_runs": str(len(runs)),
        "cold_conditions": records.conditions_table(
            [(str(i), run) for i, run in enumerate(runs, 1)]),
        "cold_table": cold_table(runs),
        "cold_peak_table": peak_table(runs),
        "cold_levels": ", ".join(str(level) for level in levels),
        "windows": str(sizes["repetitions"]),
        "window_s": f"{fmt.number(sizes['level_secs'])} s",
        "cold_warmup_s": f"{fmt.number(sizes['cold_rate_warmup_secs'])} s",
        "cold_peaks": f"{fmt.span([peaks[p] for p in executors])}/s",
        "cold_docker_peak": fmt.rate(peaks[DOCKER]),
        "cold_ratios": ", ".join(f"{ev.name(p)} {fmt.mean_and_interval(v, fmt.times)}"
                                 for p, v in ratios.items()),
        "cold_ratio_means": fmt.span([fmt.mean(v) for v in ratios.values()], fmt.times),
        "cold_target": f"{COLD_RATE_TARGET}×",
        "cold_target_interval": (
            "every build's interval lies above it" if not below else
            f"the interval of {' and '.join(below)} reaches below it"),
        "cold_docker_peak_clients": str(docker_queueing(runs)),
        "cold_top_clients": str(top_level),
        "cold_docker_top_p50": f"{fmt.number(mean_cell(runs, DOCKER, top_level, 'p50_ms') / 1000)} s",
        "cold_wasmtime_one": fmt.rate(mean_cell(runs, "wasmtime", 1, "rate")),
    }


# ------------------------------------------------------------------------------ 11: /init of big
INIT_RUNS = "init/run-*/summary.json"


def init_cells(run):
    return {(c["platform"], c["scenario"]): c for c in records.json_of(run)["init"]}


def init_mean(runs, build, scenario, key):
    return fmt.mean([init_cells(r)[(build, scenario)][key] for r in runs])


def init_cell(runs, build, scenario):
    """'7.82 / 8.97 / 3.72 [3.1–4.3] (50)': the runs' mean client p50 / mean client p99 / mean
    inside the executor with its interval across the runs, ms (count per run)."""
    inside = [init_cells(r)[(build, scenario)]["executor_mean_ms"] for r in runs]
    return (f"{fmt.number(init_mean(runs, build, scenario, 'p50_ms'))} / "
            f"{fmt.number(init_mean(runs, build, scenario, 'p99_ms'))} / "
            f"{fmt.mean_and_interval(inside, fmt.number)} "
            f"({init_cells(runs[0])[(build, scenario)]['inits']})")


def init_figures():
    runs = records.repeated(INIT_RUNS)
    first = records.json_of(runs[0])
    builds = [p for p in first["platforms"] if (p, INIT_SCENARIOS[0]) in init_cells(runs[0])]
    rows = [[ev.name(p)] + [init_cell(runs, p, s) for s in INIT_SCENARIOS] for p in builds]
    header = ["build"] + [s.replace("_", " ") for s in INIT_SCENARIOS]
    shared = {p: init_mean(runs, p, "precompiled_shared", "executor_mean_ms") for p in builds}
    met = [ev.name(p) for p in builds if shared[p] <= SHARED_INIT_TARGET_MS]
    return {
        "init_runs": str(len(runs)),
        "init_conditions": records.conditions_table(
            [(str(i), run) for i, run in enumerate(runs, 1)]),
        "init_table": fmt.table(header, rows),
        "init_count": str(first["sizes"]["inits"]),
        "init_compile_count": str(first["sizes"]["compile_inits"]),
        "init_shared_mean": fmt.span(shared.values(), fmt.ms),
        "init_new_mean": fmt.span([init_mean(runs, p, "precompiled_new", "executor_mean_ms")
                                   for p in builds], fmt.ms),
        "init_target": fmt.ms(SHARED_INIT_TARGET_MS),
        "init_target_met": " and ".join(met) if met else "none of the builds",
    }


def figures():
    figures = cold_figures()
    figures.update(init_figures())
    figures.update(util.limits_figures())
    return figures

"""Figures of the saturation run: cold starts/s, capacity, CPU cost, /init, concurrency limits."""

from report import fmt, records
from report.sections import _saturation_util as util

DOCKER = "docker"
# Issue 14's targets (constants, not measurements).
COLD_RATE_TARGET = 20
COST_TARGET = 0.1
SHARED_INIT_TARGET_MS = 0.2
INIT_SCENARIOS = ("precompiled_new", "precompiled_shared", "portable_cached", "portable_compile")


def platforms():
    return records.json_of(util.PLATFORMS)


def executors():
    return [p for p in platforms()["platforms"] if p != DOCKER]


def conditions():
    run = platforms()
    machine = run["machine"]
    sizes = run["sizes"]
    if run["quick"]:
        raise ValueError("the saturation record is a --quick run")
    return {
        "minutes": fmt.number(run["wall_seconds"] / 60),
        "cpus": str(machine["logical_cpus"]),
        "pinning": "none" if run["pinning"] is None else "on",
        "load_start": fmt.load(machine["loadavg_start"]),
        "load_end": fmt.load(machine["loadavg_end"]),
        "others": fmt.pct(machine["cpu_others_percent"] / 100),
        "windows": str(sizes["repetitions"]),
        "window_s": f"{fmt.number(sizes['level_secs'])} s",
        "cold_warmup_s": f"{fmt.number(sizes['cold_rate_warmup_secs'])} s",
    }


# ------------------------------------------------------------------ 10: cold starts at saturation
def cold_cells():
    """{(platform, clients): cell} of experiment 10."""
    return {(c["platform"], c["level"]): c
            for c in platforms()["summary"]["cells"]["cold-rate"] if c["scenario"] == "echo"}


def cold_levels():
    return sorted({level for _, level in cold_cells()})


def peak(platform):
    cells = [c for (p, _), c in cold_cells().items() if p == platform]
    return max(cells, key=lambda c: c["rate"])


def cold_table():
    cells, order = cold_cells(), executors() + [DOCKER]
    header = (["clients"] + order + [f"{p} / docker" for p in executors()])
    rows = []
    for level in cold_levels():
        row = [str(level)]
        for p in order:
            c = cells[(p, level)]
            row.append(f"{fmt.fixed(c['rate'], 1)} ± {fmt.fixed(c['rate_ci95'], 1)} "
                       f"({fmt.fixed(c['p50_ms'], 1)})")
        row += [fmt.times(cells[(p, level)]["rate"] / cells[(DOCKER, level)]["rate"])
                for p in executors()]
        rows.append(row)
    docker_peak = peak(DOCKER)["rate"]
    rows.append(["**peak**"] + [f"**{fmt.fixed(peak(p)['rate'], 1)}**" for p in order]
                + [f"**{fmt.times(peak(p)['rate'] / docker_peak)}**" for p in executors()])
    return fmt.table(header, rows)


def docker_queueing():
    """Guards 'Docker's peak comes at N clients; beyond, its starts queue and its rate falls'."""
    levels = cold_levels()
    top = peak(DOCKER)["level"]
    p50s = [cold_cells()[(DOCKER, level)]["p50_ms"] for level in levels]
    if top == levels[-1] or p50s != sorted(p50s):
        raise ValueError(f"the prose says Docker peaks before {levels[-1]} clients and its "
                         f"start latency grows with the clients; the records say peak at {top}, "
                         f"p50s {p50s}")
    return top


def cold_figures():
    peaks = [peak(p)["rate"] for p in executors()]
    docker_peak = peak(DOCKER)["rate"]
    ratios = [rate / docker_peak for rate in peaks]
    if min(ratios) < COLD_RATE_TARGET:
        raise ValueError(f"the prose says the target ≥ {COLD_RATE_TARGET}× is met; the lowest "
                         f"ratio is {min(ratios):.1f}")
    top_level = cold_levels()[-1]
    errors = sum(c["errors"] for c in cold_cells().values())
    if errors:
        raise ValueError(f"experiment 10 had {errors} errors; the prose does not say so")
    return {
        "cold_table": cold_table(),
        "cold_levels": ", ".join(str(level) for level in cold_levels()),
        "cold_peaks": fmt.span(peaks),
        "cold_docker_peak": fmt.number(docker_peak),
        "cold_ratios": fmt.span(ratios, fmt.times),
        "cold_target": f"{COLD_RATE_TARGET}×",
        "cold_docker_peak_clients": str(docker_queueing()),
        "cold_top_clients": str(top_level),
        "cold_docker_top_p50": f"{fmt.number(cold_cells()[(DOCKER, top_level)]['p50_ms'] / 1000)} s",
        "cold_docker_one_p50": fmt.ms(cold_cells()[(DOCKER, 1)]["p50_ms"]),
        "cold_wasmtime_one": f"{fmt.number(cold_cells()[('wasmtime', 1)]['rate'])}/s",
    }


# --------------------------------------------------------------------------- 9: platform cost
def cost_figures():
    cost = {c["platform"]: c for c in platforms()["cost"]}
    docker_cpu = cost[DOCKER]["cpu_us"]
    rows = [[p, f"{c['activations']:,}", fmt.number(c["cpu_us"]), fmt.number(c["wall_us"]),
             fmt.number(c["executor_us"]), fmt.fixed(c["cpu_us"] / docker_cpu, 2)]
            for p, c in cost.items()]
    ratios = {p: cost[p]["cpu_us"] / docker_cpu for p in executors()}
    best = min(ratios, key=ratios.get)
    if ratios[best] <= COST_TARGET:
        raise ValueError(f"the prose says the cost target ≤ {COST_TARGET} of Docker is not met; "
                         f"{best} is at {ratios[best]:.2f}")
    activations = {c["activations"] for c in cost.values()}
    return {
        "cost_table": fmt.table(["platform", "activations", "CPU µs per activation",
                                 "wall µs per activation", "µs inside the executor",
                                 "CPU vs docker"], rows, right=(1, 2, 3, 4, 5)),
        "cost_activations": f"{activations.pop():,}" if len(activations) == 1 else "–",
        "cost_best": best,
        "cost_best_ratio": fmt.fixed(ratios[best], 2),
        "cost_best_us": fmt.us(cost[best]["cpu_us"]),
        "cost_docker_us": fmt.us(docker_cpu),
        "cost_others": "; ".join(f"{p} {fmt.fixed(r, 2)}" for p, r in ratios.items() if p != best),
        "cost_target": f"{COST_TARGET:g}",
    }


# ------------------------------------------------------------------------------ 11: /init of big
def init_cell(cell):
    """'7.82 / 8.97 / 3.72 (50)': client p50 / client p99 / executor mean, ms (count)."""
    return (f"{fmt.number(cell['p50_ms'])} / {fmt.number(cell['p99_ms'])} / "
            f"{fmt.number(cell['executor_mean_ms'])} ({cell['inits']})")


def init_figures():
    init = {(c["platform"], c["scenario"]): c for c in platforms()["init"]}
    builds = [p for p in executors() if (p, INIT_SCENARIOS[0]) in init]
    rows = [[p] + [init_cell(init[(p, s)]) for s in INIT_SCENARIOS] for p in builds]
    header = ["build"] + [s.replace("_", " ") for s in INIT_SCENARIOS]
    shared = {p: init[(p, "precompiled_shared")]["executor_mean_ms"] for p in builds}
    met = [p for p in builds if shared[p] <= SHARED_INIT_TARGET_MS]
    return {
        "init_table": fmt.table(header, rows),
        "init_count": str(platforms()["sizes"]["inits"]),
        "init_compile_count": str(platforms()["sizes"]["compile_inits"]),
        "init_shared_mean": fmt.span(shared.values(), fmt.ms),
        "init_new_mean": fmt.span([init[(p, "precompiled_new")]["executor_mean_ms"]
                                   for p in builds], fmt.ms),
        "init_target": fmt.ms(SHARED_INIT_TARGET_MS),
        "init_target_met": " and ".join(met) if met else "none of the builds",
    }


def figures():
    figures = conditions()
    figures.update(cold_figures())
    figures.update(cost_figures())
    figures.update(init_figures())
    figures.update(util.limits_figures())
    return figures

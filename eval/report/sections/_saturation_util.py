"""The saturation section's concurrency-limit figures (experiment 5 at the actions' limits)."""

from report import fmt, records

PLATFORMS = "rework/platforms/summary.json"
LIMITS = "rework/limits/summary.json"
SECTION_5 = "evaluation/realistic/summary.json"
DOCKER = "docker"


def listing(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def limit_cells(relative):
    return {(c["platform"], c["level"]): c
            for c in records.json_of(relative)["summary"]["cells"]["realistic"]}


def share(cell):
    return cell["cold"] / cell["requests"]


def limits_table(cells):
    rows = [[p, str(limit), str(c["requests"]), str(c["errors"]), str(c["cold"]),
             fmt.pct(share(c), 1), fmt.fixed(c["p50_ms"], 1), fmt.fixed(c["p90_ms"], 1),
             fmt.fixed(c["p99_ms"], 1), fmt.fixed(c["mean_ms"], 1)]
            for (p, limit), c in sorted(cells.items())]
    return fmt.table(["platform", "concurrency limit", "requests", "failed", "cold starts",
                      "cold share", "p50 ms", "p90 ms", "p99 ms", "mean ms"], rows,
                     right=tuple(range(1, 10)))


def falling(values, what):
    if values != sorted(values, reverse=True):
        raise ValueError(f"the prose says {what} falls as the limit rises; the records: {values}")
    return values


def limits_figures():
    run = records.json_of(LIMITS)
    cells = limit_cells(LIMITS)
    limits = run["sizes"]["realistic_limits"]
    executor = next(p for p in run["platforms"] if p != DOCKER)
    docker = [cells[(DOCKER, n)] for n in limits]
    wasm = [cells[(executor, n)] for n in limits]
    falling([share(c) for c in docker], "Docker's cold share")
    falling([share(c) for c in wasm], "the executor's cold share")
    falling([c["p99_ms"] for c in docker], "Docker's p99")
    falling([c["p99_ms"] for c in wasm], "the executor's p99")
    if any(w["p99_ms"] >= d["p99_ms"] for w, d in zip(wasm, docker)) or any(
            c["errors"] for c in cells.values()):
        raise ValueError("the prose says the executor's p99 is below Docker's at every limit "
                         "and nothing failed; the records disagree")
    before = limit_cells(SECTION_5)[(DOCKER, limits[0])]
    if share(docker[0]) <= share(before) or docker[0]["p99_ms"] <= before["p99_ms"]:
        raise ValueError("the prose says Docker thrashed at limit 1 in this run, more than in "
                         "section 5's; the records disagree")
    start = run["machine"]["loadavg_start"].split()[:3]
    if start != records.json_of(PLATFORMS)["machine"]["loadavg_end"].split()[:3]:
        raise ValueError("the prose says this run followed the run above at once (the same "
                         "load average); the records disagree")
    later = limits[1:]
    return {
        "lim_table": limits_table(cells),
        "lim_executor": executor,
        "lim_limits": listing([str(n) for n in limits]),
        "lim_secs": f"{fmt.number(run['sizes']['realistic_secs'])} s",
        "lim_rate": fmt.rate(run["sizes"]["realistic_rate"]),
        "lim_load_start": fmt.load(run["machine"]["loadavg_start"]),
        "lim_load_end": fmt.load(run["machine"]["loadavg_end"]),
        "lim_load5": fmt.number(float(start[1])),
        "lim_docker_share": fmt.pct(share(docker[0])),
        "lim_docker_shares": " and ".join(f"{fmt.pct(share(c))} (limit {n})"
                                          for c, n in zip(docker[1:], later)),
        "lim_docker_p99s": " and ".join(f"{fmt.number(c['p99_ms'] / 1000)} s" for c in docker[1:]),
        "lim_wasm_share": fmt.pct(share(wasm[0])),
        "lim_wasm_shares": " and ".join(fmt.pct(share(c)) for c in wasm[1:]),
        "lim_wasm_p99": fmt.ms(wasm[0]["p99_ms"]),
        "lim_wasm_p99s": " and ".join(fmt.ms(c["p99_ms"]) for c in wasm[1:]),
        "lim_p99_ratios": ", ".join(f"{fmt.times(w['p99_ms'] / d['p99_ms'])} at {n}"
                                    for w, d, n in zip(wasm[1:], docker[1:], later)),
        "lim_docker_p99_one": f"{fmt.number(docker[0]['p99_ms'] / 1000)} s",
        "lim_before_share": fmt.pct(share(before)),
        "lim_before_p99": f"{fmt.number(before['p99_ms'] / 1000)} s",
    }

"""The saturation section's concurrency-limit figures (experiment 5 at the actions' limits),
from repeated runs on one build."""

from report import fmt, records
from report.sections import _evaluation_util as ev

LIMITS = "limits/run-*/summary.json"
DOCKER = "docker"


def limit_cells(relative):
    return {(c["platform"], c["level"]): c
            for c in records.json_of(relative)["summary"]["cells"]["realistic"]}


def share(cell):
    return cell["cold"] / cell["requests"]


def p99(cell):
    return cell["p99_ms"]


def across_runs(runs, platform, limit, figure):
    """One figure of one cell in every run."""
    return [figure(limit_cells(r)[(platform, limit)]) for r in runs]


def limits_table(runs, platforms, limits):
    """Per platform and limit: each run's cold share and p99, and their means with the 95 %
    intervals across the runs."""
    rows = []
    for p in platforms:
        for limit in limits:
            shares = across_runs(runs, p, limit, share)
            p99s = across_runs(runs, p, limit, p99)
            rows.append([ev.name(p), str(limit),
                         " · ".join(fmt.pct(s, 1) for s in shares),
                         fmt.mean_and_interval(shares, lambda s: fmt.pct(s, 1)),
                         " · ".join(fmt.number(v) for v in p99s),
                         fmt.mean_and_interval(p99s, fmt.ms)])
    runs_label = " · ".join(f"run {i}" for i in range(1, len(runs) + 1))
    return fmt.table(["platform", "concurrency limit", f"cold share: {runs_label}",
                      "cold share, mean [95 % interval]", f"p99 ms: {runs_label}",
                      "p99, mean [95 % interval]"], rows, right=(1, 2, 3, 4, 5))


def falling(values, what):
    if values != sorted(values, reverse=True):
        raise ValueError(f"the prose says {what} falls as the limit rises; the runs' means: {values}")
    return values


def limits_figures():
    runs = records.repeated(LIMITS)
    first = records.json_of(runs[0])
    limits = first["sizes"]["realistic_limits"]
    executor = next(p for p in first["platforms"] if p != DOCKER)
    platforms = [executor, DOCKER]
    failed = sum(c["errors"] for r in runs for c in limit_cells(r).values())
    if failed:
        raise ValueError(f"the prose says no activation failed; {failed} did")

    def means(platform, figure):
        return [fmt.mean(across_runs(runs, platform, n, figure)) for n in limits]

    docker_shares = falling(means(DOCKER, share), "Docker's cold share")
    wasm_shares = falling(means(executor, share), "the executor's cold share")
    docker_p99 = means(DOCKER, p99)
    wasm_p99 = means(executor, p99)
    if any(w >= d for w, d in zip(wasm_p99, docker_p99)):
        raise ValueError("the prose says the executor's mean p99 is below Docker's at every "
                         f"limit; the means: {wasm_p99} against {docker_p99}")
    later = limits[1:]
    return {
        "lim_runs": str(len(runs)),
        "lim_conditions": records.conditions_table(
            [(str(i), r) for i, r in enumerate(runs, 1)]),
        "lim_table": limits_table(runs, platforms, limits),
        "lim_executor": executor,
        "lim_limits": fmt.listing([str(n) for n in limits]),
        "lim_secs": f"{fmt.number(first['sizes']['realistic_secs'])} s",
        "lim_rate": fmt.rate(first["sizes"]["realistic_rate"]),
        "lim_docker_share": fmt.pct(docker_shares[0]),
        "lim_docker_shares": " and ".join(f"{fmt.pct(s)} (limit {n})"
                                          for s, n in zip(docker_shares[1:], later)),
        "lim_wasm_share": fmt.pct(wasm_shares[0]),
        "lim_wasm_shares": " and ".join(fmt.pct(s) for s in wasm_shares[1:]),
        "lim_docker_p99s": " → ".join(fmt.ms(v) for v in docker_p99),
        "lim_wasm_p99s": " → ".join(fmt.ms(v) for v in wasm_p99),
        "lim_p99_ratios": ", ".join(f"{fmt.times(w / d)} at {n}"
                                    for w, d, n in zip(wasm_p99, docker_p99, limits)),
    }

"""RESULTS.md's capacity in 1 GiB: the arrival rate each platform sustains with its pool sized
as OpenWhisk reserves containers, the rate found by search, in repeated runs on one build."""

from report import fmt, records
from report.sections import _evaluation_util as ev

RUNS = "capacity/run-*/summary.json"
SIZING = "reservation"


def _row(run, platform):
    for row in records.json_of(run)["capacity"]:
        if row["platform"] == platform and row["sizing"] == SIZING:
            return row
    raise KeyError(f"{run}: no {SIZING} row for {platform}")


def _probes(row):
    def probe(level):
        rate, p99, failed = level
        mark = f", {failed} failed" if failed else ""
        return f"{fmt.number(rate)}: {'–' if p99 is None else fmt.number(p99)}{mark}"

    return " · ".join(probe(level) for level in sorted(row["levels"], key=lambda level: level[0]))


def _sustained(run, platform):
    rate = _row(run, platform)["sustainable_rate"]
    if rate is None:
        raise ValueError(f"{run}: {platform} sustained no rate; the prose assumes each did")
    return rate


def _ratios(runs, platform):
    return [_sustained(r, platform) / _sustained(r, "docker") for r in runs]


def _bounds(run, platform):
    """One run's ratio with its bounds: each sustainable rate lies in [sustained, first failing)."""
    mine, docker = _row(run, platform), _row(run, "docker")
    low = mine["sustainable_rate"] / docker["first_failing_rate"]
    high = (fmt.times(mine["first_failing_rate"] / docker["sustainable_rate"])
            if mine["first_failing_rate"] else "open")
    return f"{fmt.times(mine['sustainable_rate'] / docker['sustainable_rate'])} ({fmt.times(low)}–{high})"


def _table(runs, platforms):
    first = runs[0]
    rows = []
    for p in platforms:
        rates = [_sustained(r, p) for r in runs]
        rows.append([ev.name(p), fmt.number(_row(first, p)["container_mb"]),
                     fmt.number(_row(first, p)["slots"]),
                     *(f"{fmt.rate(_sustained(r, p))} ({fmt.number(_row(r, p)['first_failing_rate'])})"
                       for r in runs),
                     fmt.mean_and_interval(rates, fmt.rate),
                     "1×" if p == "docker" else fmt.mean_and_interval(_ratios(runs, p), fmt.times)])
    header = ["platform", "MB per container", "slots",
              *(f"run {i}: sustained (first failing)" for i in range(1, len(runs) + 1)),
              "sustained, mean [95 % interval across runs]",
              "sustained vs Docker's, mean of the runs' ratios [interval]"]
    return fmt.table(header, rows, right=tuple(range(1, len(runs) + 5)))


def _probe_table(runs, platforms):
    rows = [[ev.name(p), str(i), _probes(_row(r, p)),
             "1×" if p == "docker" else _bounds(r, p)]
            for p in platforms for i, r in enumerate(runs, 1)]
    return fmt.table(["platform", "run", "probes in rate order: arrivals/s: p99 ms",
                      "sustained vs Docker's (bounds)"], rows)


def figures():
    runs = records.repeated(RUNS)
    record = records.json_of(runs[0])
    sizes = record["sizes"]
    platforms = record["platforms"]
    executors = [p for p in platforms if p not in ev.BASELINES]
    if {len({_row(r, p)["slots"] for p in platforms}) for r in runs} != {1}:
        raise ValueError("the prose says every platform gets the same slots when reserving")
    means = {p: fmt.mean(_ratios(runs, p)) for p in executors}
    if min(means.values()) <= 1:
        raise ValueError(f"the prose says the executors sustain more than Docker; means {means}")
    return {
        "runs": str(len(runs)),
        "conditions": records.conditions_table([(str(i), r) for i, r in enumerate(runs, 1)]),
        "secs": f"{fmt.number(sizes['capacity_secs'])} s",
        "p99": f"{fmt.number(sizes['capacity_p99_ms'])} ms",
        "ladder": ", ".join(fmt.number(r) for r in sizes["capacity_rates"]),
        "precision": fmt.pct(sizes["capacity_precision"] - 1),
        "cap": f"{fmt.number(sizes['capacity_rate_cap'])}/s",
        "slots": fmt.number(_row(runs[0], "docker")["slots"]),
        "table": _table(runs, platforms),
        "probe_table": _probe_table(runs, platforms),
        "reservation_ratio": fmt.span(means.values(), fmt.times),
        "ratios": ", ".join(f"{ev.name(p)} {fmt.mean_and_interval(_ratios(runs, p), fmt.times)}"
                            for p in executors),
        "sustained": ", ".join(
            f"{ev.name(p)} {fmt.mean_and_interval([_sustained(r, p) for r in runs], fmt.rate)}"
            for p in platforms),
    }

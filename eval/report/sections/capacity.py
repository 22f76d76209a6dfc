"""RESULTS.md's capacity in 1 GiB: the arrival rate each platform sustains with its pool sized
as OpenWhisk reserves containers, and sized by each platform's measured memory per container,
the rate found by search, in repeated runs on one build for each sizing."""

from report import fmt, records
from report.sections import _evaluation_util as ev

# Each sizing's repeated runs: the records' directory and the rows' `sizing`.
RUNS = {
    "reservation": "capacity/run-*/summary.json",
    "measured": "capacity-measured/run-*/summary.json",
}


def _row(run, platform):
    sizing = _sizing_of(run)
    for row in records.json_of(run)["capacity"]:
        if row["platform"] == platform and row["sizing"] == sizing:
            return row
    raise KeyError(f"{run}: no {sizing} row for {platform}")


def _sizing_of(run):
    """The sizing whose runs `run` is one of, by its directory."""
    for sizing, pattern in RUNS.items():
        if run.startswith(pattern.split("/run-")[0] + "/run-"):
            return sizing
    raise KeyError(f"{run}: of no sizing's runs")


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


def _rates(runs, platform):
    """A platform's sustained rate in each of `runs`."""
    return [_sustained(r, platform) for r in runs]


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
    rows = []
    for p in platforms:
        rates = _rates(runs, p)
        rows.append([ev.name(p), fmt.span([_row(r, p)["container_mb"] for r in runs]),
                     _slots_span(runs, p),
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


def _cold_shares(runs, platforms, sustained=None):
    """The share of cold starts among the activations of each probe (run, platform, rate) of
    `platforms`; with `sustained` True only the probes at rates the platform sustained, with
    False only those above them."""
    shares = []
    for run in runs:
        counts = {}
        for row in records.csv_rows(run.replace("summary.json", "capacity.csv.gz")):
            if row["platform"] in platforms:
                total, cold = counts.get((row["platform"], row["level"]), (0, 0))
                counts[(row["platform"], row["level"])] = (total + 1, cold + int(row["cold"]))
        for (platform, level), (total, cold) in counts.items():
            # A sample's level is the probe's rate in arrivals per minute.
            within = float(level) / 60 <= _sustained(run, platform) + 1e-9
            if sustained is None or within == sustained:
                shares.append(cold / total)
    return shares


def _slots_span(runs, platform):
    """The slots a platform's pool got across the runs (each run measures its memory anew)."""
    return fmt.span([_row(r, platform)["slots"] for r in runs], fmt.number)


def _sizing_figures(sizing):
    """The figures of one sizing's runs, their keys prefixed with the sizing but for
    reservation's (the section's first)."""
    runs = records.repeated(RUNS[sizing])
    platforms = records.json_of(runs[0])["platforms"]
    executors = [p for p in platforms if p not in ev.BASELINES]
    means = {p: fmt.mean(_ratios(runs, p)) for p in executors}
    if min(means.values()) <= 1:
        raise ValueError(f"the prose says the executors sustain more than Docker; means {means}")
    prefix = "" if sizing == "reservation" else f"{sizing}_"
    return runs, platforms, executors, means, {
        f"{prefix}runs": str(len(runs)),
        f"{prefix}conditions": records.conditions_table(
            [(str(i), r) for i, r in enumerate(runs, 1)]),
        f"{prefix}table": _table(runs, platforms),
        f"{prefix}probe_table": _probe_table(runs, platforms),
        f"{prefix}ratio": fmt.span(means.values(), fmt.times),
        f"{prefix}ratios": ", ".join(
            f"{ev.name(p)} {fmt.mean_and_interval(_ratios(runs, p), fmt.times)}"
            for p in executors),
        f"{prefix}sustained": ", ".join(
            f"{ev.name(p)} {fmt.mean_and_interval(_rates(runs, p), fmt.rate)}"
            for p in platforms),
    }


def _builds_and_docker(executors):
    """The platforms of runs in prose: the builds they measured and Docker."""
    builds = ("every executor build" if tuple(executors) == ev.EXECUTORS
              else f"the {fmt.listing([ev.name(p) for p in executors])} "
                   f"build{'s' if len(executors) > 1 else ''}")
    return f"{builds} and Docker"


def figures():
    runs, platforms, _, _, reservation = _sizing_figures("reservation")
    record = records.json_of(runs[0])
    sizes = record["sizes"]
    if {len({_row(r, p)["slots"] for p in platforms}) for r in runs} != {1}:
        raise ValueError("the prose says every platform gets the same slots when reserving")
    measured_runs, measured_platforms, measured_executors, _, measured = \
        _sizing_figures("measured")
    if any(_row(r, "docker")["slots"] >= _row(r, p)["slots"]
           for r in measured_runs for p in measured_executors):
        raise ValueError("the prose says Docker's measured pool holds the fewest containers")
    if records.json_of(measured_runs[0])["sizes"] != sizes:
        raise ValueError("the prose says both sizings' runs searched with the same sizes")
    both = [p for p in platforms if p in measured_platforms]
    reserved_means = {p: fmt.mean(_rates(runs, p)) for p in both}
    measured_means = {p: fmt.mean(_rates(measured_runs, p)) for p in both}
    if any(measured_means[p] <= reserved_means[p] for p in both):
        raise ValueError("the prose says both platforms sustain more with pools sized by use; "
                         f"means {reserved_means} reserved, {measured_means} measured")
    reserved_cold = _cold_shares(runs, both)
    measured_cold = _cold_shares(measured_runs, both, sustained=True)
    measured_over_cold = _cold_shares(measured_runs, both, sustained=False)
    if max(measured_cold) >= min(reserved_cold):
        raise ValueError("the prose says every probe the measured pools sustained started fewer "
                         "cold containers than any probe of the reserved pools")
    if max(measured_over_cold) <= max(measured_cold):
        raise ValueError("the prose says the measured pools started more cold containers above "
                         "the rates they sustained")
    return {
        **reservation,
        **measured,
        "measured_of": _builds_and_docker(measured_executors),
        "measured_platforms": ",".join(measured_platforms),
        "both": _builds_and_docker([p for p in both if p not in ev.BASELINES]),
        "measured_docker_slots": _slots_span(measured_runs, "docker"),
        "measured_docker_mb": fmt.span(
            [_row(r, "docker")["container_mb"] for r in measured_runs], fmt.number),
        "measured_vs_reserved": fmt.listing(
            [f"{ev.name(p)}'s from {fmt.rate(reserved_means[p])} to {fmt.rate(measured_means[p])}"
             for p in both]),
        "reserved_dates": records.days(records.json_of(r) for r in runs),
        "measured_dates": records.days(records.json_of(r) for r in measured_runs),
        "reserved_cold": fmt.span(reserved_cold, fmt.pct),
        "measured_cold": fmt.span(measured_cold, fmt.pct),
        "measured_over_cold": fmt.pct(max(measured_over_cold)),
        "measured_executor_slots": fmt.span(
            [_row(r, p)["slots"] for r in measured_runs for p in measured_executors],
            fmt.number),
        "secs": f"{fmt.number(sizes['capacity_secs'])} s",
        "p99": f"{fmt.number(sizes['capacity_p99_ms'])} ms",
        "ladder": ", ".join(fmt.number(r) for r in sizes["capacity_rates"]),
        "precision": fmt.pct(sizes["capacity_precision"] - 1),
        "cap": f"{fmt.number(sizes['capacity_rate_cap'])}/s",
        "slots": fmt.number(_row(runs[0], "docker")["slots"]),
    }

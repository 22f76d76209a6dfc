"""RESULTS.md's capacity in 1 GiB: the arrival rate each platform sustains, its pool sized as
OpenWhisk reserves containers and, separately, by measured memory; the rate found by search."""

from report import fmt, records
from report.sections import _evaluation_util as ev

RECORD = "capacity/summary.json"


def _record():
    return records.json_of(RECORD)


def _rows():
    rows = _record()["capacity"]
    if not rows:
        raise ValueError(f"{RECORD}: no capacity rows")
    return rows


def _row(platform, sizing):
    for row in _rows():
        if row["platform"] == platform and row["sizing"] == sizing:
            return row
    raise KeyError(f"{RECORD}: no {sizing} row for {platform}")


def _rate(x):
    return "–" if x is None else f"{fmt.number(x)}/s"


def _probes(row):
    def probe(level):
        rate, p99, failed = level
        mark = f", {failed} failed" if failed else ""
        return f"{fmt.number(rate)}: {'–' if p99 is None else fmt.number(p99)}{mark}"

    return " · ".join(probe(level) for level in sorted(row["levels"], key=lambda level: level[0]))


def _bounds(row, docker):
    """The ratio of sustainable rates as bounds: each rate lies in [sustained, first failing);
    a platform that failed the ladder's first rate sustains something below it."""
    mine_low, mine_high = row["sustainable_rate"], row["first_failing_rate"]
    docker_low, docker_high = docker["sustainable_rate"], docker["first_failing_rate"]
    if mine_low is None:
        return "–"
    low = fmt.times(mine_low / docker_high) if docker_high else "–"
    if docker_low is None:
        return f"more than {low}"
    high = fmt.times(mine_high / docker_low) if mine_high else "open"
    return f"{fmt.times(mine_low / docker_low)} ({low} to {high})"


def _sustained(row):
    if row["sustainable_rate"] is None:
        return f"below {_rate(row['first_failing_rate'])}"
    return _rate(row["sustainable_rate"])


def _sizings():
    """The sizings the run measured, reservation first."""
    return sorted({row["sizing"] for row in _rows()}, key=lambda s: s != "reservation")


def _table(platforms):
    rows = []
    for sizing in _sizings():
        docker = _row("docker", sizing)
        for platform in platforms:
            row = _row(platform, sizing)
            rows.append([ev.name(platform), sizing, fmt.number(row["container_mb"]),
                         fmt.number(row["slots"]), _probes(row), _sustained(row),
                         _rate(row["first_failing_rate"]),
                         "1×" if platform == "docker" else _bounds(row, docker)])
    header = ["platform", "pool sized by", "MB per container", "slots",
              "probes in rate order: arrivals/s: p99 ms", "sustained", "first failing",
              "sustained vs Docker's (bounds)"]
    return fmt.table(header, rows, right=(2, 3))


def _ratio_span(platforms, sizing):
    """The executors' sustained rates over Docker's; a lower bound when Docker sustained none."""
    docker = _row("docker", sizing)
    rates = [_row(p, sizing)["sustainable_rate"] for p in platforms]
    if None in rates:
        raise ValueError(f"an executor sustained no rate ({sizing}); the prose assumes each did")
    if docker["sustainable_rate"] is None:
        return "more than " + fmt.span([r / docker["first_failing_rate"] for r in rates], fmt.times)
    return fmt.span([r / docker["sustainable_rate"] for r in rates], fmt.times)


def figures():
    record = _record()
    sizes, machine = record["sizes"], record["machine"]
    platforms = record["platforms"]
    executors = [p for p in platforms if p not in ev.BASELINES]
    reservation = {p: _row(p, "reservation") for p in platforms}
    if "reservation" not in _sizings():
        raise ValueError(f"{RECORD}: the prose is about the reservation sizing, which it lacks")
    if len({row["slots"] for row in reservation.values()}) != 1:
        raise ValueError("the prose says every platform gets the same slots when reserving")
    return {
        "date": record["date_utc"][:10],
        "commit": record["commit"],
        "minutes": fmt.number(record["wall_seconds"] / 60, 2),
        "load_start": fmt.load(machine["loadavg_start"]),
        "load_end": fmt.load(machine["loadavg_end"]),
        "others": fmt.pct(machine["cpu_others_percent"] / 100),
        "secs": f"{fmt.number(sizes['capacity_secs'])} s",
        "p99": f"{fmt.number(sizes['capacity_p99_ms'])} ms",
        "ladder": ", ".join(fmt.number(r) for r in sizes["capacity_rates"]),
        "precision": fmt.pct(sizes["capacity_precision"] - 1),
        "cap": f"{fmt.number(sizes['capacity_rate_cap'])}/s",
        "slots": fmt.number(reservation["docker"]["slots"]),
        "table": _table(platforms),
        "reservation_ratio": _ratio_span(executors, "reservation"),
        "sustained": ", ".join(f"{ev.name(p)} {_sustained(_row(p, 'reservation'))}"
                               for p in platforms),
    }

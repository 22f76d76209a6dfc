"""RESULTS.md's repeated headline experiments: cold start, CPU-bound and mixed load, run three
times on one build, each figure given per run and as a mean with its interval across runs."""

from report import fmt, records
from report.sections import _evaluation_util as ev

RUNS = "repeated/run-*/summary.json"


def _platforms(run):
    return records.json_of(run)["platforms"]


def _executors(run):
    return [p for p in _platforms(run) if p not in ev.BASELINES]


def _cold(run, platform, level):
    return ev.cell("cold", platform, level, relative=run)["p50_ms"]


def _top_level(run):
    return max(ev.levels("cold", run))


def _cpu_of_native(run, platform):
    def total(p):
        return sum(ev.cell("cpu", p, lv, relative=run)["rate"] for lv in ev.levels("cpu", run))

    return total(platform) / total("native")


def _mixed_vs_docker(run, platform):
    """The rate once every client runs (the evaluation's plateau), against Docker's."""
    plateau = records.json_of(run)["summary"]["mixed_plateau"]
    return plateau[platform] / plateau["docker"]


def _mixed_whole_rate(run, platform):
    """Activations per second over the whole mixed run: from the first request to the last answer."""
    rows = [r for r in records.csv_rows(run.replace("summary.json", "mixed.csv.gz"))
            if r["platform"] == platform and r["warmup"] == "0"]
    first = min(int(r["start_ns"]) for r in rows)
    last = max(int(r["start_ns"]) + int(r["latency_ns"]) for r in rows)
    return len(rows) / ((last - first) / 1e9)


def _mixed_whole_vs_docker(run, platform):
    return _mixed_whole_rate(run, platform) / _mixed_whole_rate(run, "docker")


def _series(figure, platforms, runs):
    """{platform: [the figure in each run]}."""
    return {p: [figure(run, p) for run in runs] for p in platforms}



def _rows(label, series, unit):
    return [[label, ev.name(p), *(unit(v) for v in values), fmt.mean_and_interval(values, unit)]
            for p, values in series.items()]


def _conditions(runs):
    return records.conditions_table([(str(i), run) for i, run in enumerate(runs, 1)])


def _means(series):
    return {p: fmt.mean(values) for p, values in series.items()}


def _spread(series):
    """The largest range of a figure across runs, as a share of its mean."""
    return max((max(v) - min(v)) / (sum(v) / len(v)) for v in series.values())


def figures():
    runs = records.repeated(RUNS)
    first = runs[0]
    executors, platforms = _executors(first), _platforms(first)
    top = _top_level(first)
    cold_one = _series(lambda r, p: _cold(r, p, 1), platforms, runs)
    cold_top = _series(lambda r, p: _cold(r, p, top), platforms, runs)
    cpu = _series(_cpu_of_native, [p for p in platforms if p != "native"], runs)
    mixed = _series(_mixed_whole_vs_docker, [p for p in platforms if p != "docker"], runs)
    plateau = _series(_mixed_vs_docker, [p for p in platforms if p != "docker"], runs)
    one, many = _means(cold_one), _means(cold_top)
    cpu_mean, mixed_mean = _means(cpu), _means(mixed)
    if not all(one[p] < one["docker"] / 10 for p in executors):
        raise ValueError("the prose says an executor's cold start is a small fraction of Docker's")
    table = fmt.table(
        ["figure", "platform", *(f"run {i}" for i in range(1, len(runs) + 1)),
         "mean [95 % interval across runs]"],
        _rows("cold start, one at a time: p50 to first result", cold_one, ev.ms2)
        + _rows(f"cold start, {top} at once: p50 to first result", cold_top, ev.duration)
        + _rows("CPU-bound: activations/s summed over the levels, of native's", cpu, fmt.pct)
        + _rows("mixed: activations/s over the whole run, of Docker's", mixed, ev.ratio)
        + _rows("mixed: … only once every client runs, of Docker's", plateau, ev.ratio))
    figures = {
        "runs": str(len(runs)),
        "conditions": _conditions(runs),
        "table": table,
        "top": str(top),
        "cold_one_exec": fmt.span([one[p] for p in executors], ev.ms2),
        "cold_one_docker": ev.ms2(one["docker"]),
        "cold_one_change": "−{} to −{} %".format(
            *(fmt.fixed(100 * (1 - f(one[p] for p in executors) / one["docker"]), 1)
              for f in (max, min))),
        "cold_top_exec": fmt.span([many[p] for p in executors], ev.ms2),
        "cold_top_docker": ev.duration(many["docker"]),
        "cold_spread": fmt.pct(_spread(cold_one)),
        "cpu_spread": fmt.pct(_spread(cpu)),
        "mixed_spread": fmt.pct(_spread(mixed)),
    }
    for p in executors:
        figures[f"cpu_of_native_{p}"] = fmt.mean_and_interval(cpu[p], fmt.pct)
        figures[f"mixed_vs_docker_{p}"] = fmt.mean_and_interval(mixed[p], ev.ratio)
    figures["cpu_of_native_docker"] = fmt.mean_and_interval(cpu["docker"], fmt.pct)
    figures["cpu_low"] = ev.name(min(cpu_mean, key=cpu_mean.get))
    others = [records.json_of(r)["machine"]["cpu_others_percent"] / 100 for r in runs]
    figures["others"] = fmt.span(others, fmt.pct)
    figures["mixed_low"] = ev.name(min(mixed_mean, key=mixed_mean.get))
    return figures

"""Figures of the soak runs: ten minutes of hostile and benign activations per executor build."""

import statistics

from report import fmt, records

BUILDS = ("wasmtime", "wasmer")
# wasm-bench soak's defaults at the commit that made the records (not kept in summary.json).
WARMUP_SECONDS = 30
WINDOW_SECONDS = 60
TOLERANCE = 0.10


def summary(build):
    return records.json_of(f"soak/{build}/summary.json")


def samples(build):
    return [(float(r["seconds"]), int(r["rss_kib"]), int(r["fds"]))
            for r in records.csv_rows(f"soak/{build}/samples.csv")]


def lower_median(values):
    """The median as wasm-bench soak takes it: the upper middle of the sorted values."""
    values = sorted(values)
    return values[len(values) // 2]


def first_and_last(build, column):
    """The medians of the first minute after the warm-up and of the last minute, from samples.csv."""
    rows = samples(build)
    total = WARMUP_SECONDS + summary(build)["seconds"]
    first = [r[column] for r in rows if WARMUP_SECONDS <= r[0] < WARMUP_SECONDS + WINDOW_SECONDS]
    last = [r[column] for r in rows if r[0] + WINDOW_SECONDS >= total]
    return lower_median(first), lower_median(last)


def drift(build, figure, column):
    """(first, last) of one figure, recomputed from the samples and checked against the summary."""
    kept = next(d for d in summary(build)["drift"] if d["figure"] == figure)
    computed = first_and_last(build, column)
    if computed != (kept["first_minute"], kept["last_minute"]):
        raise ValueError(f"soak {build}: samples.csv gives {figure} {computed}, summary.json "
                         f"{kept['first_minute']} → {kept['last_minute']}")
    if computed[1] > computed[0] * (1 + TOLERANCE) or not kept["ok"]:
        raise ValueError(f"the prose says {build}'s {figure} stayed within its bound, the "
                         f"records say {computed[0]} → {computed[1]}")
    return computed


def failures(build):
    """'0 (no 503)', guarded: the prose says no benign request failed."""
    s = summary(build)
    if s["failures"] or s["benign_turned_away_503"]:
        raise ValueError(f"the prose says soak {build} had no failure, the records say "
                         f"{len(s['failures'])} failures and {s['benign_turned_away_503']} 503s")
    return "0 (no 503)"


def growth(first, last):
    change = (last - first) / first
    sign = "+" if change >= 0 else "−"
    return f"{sign}{fmt.pct(abs(change), 1 if abs(change) < 0.01 else 0)}"


def row(build):
    s = summary(build)
    rss = drift(build, "RSS (KiB)", 1)
    fds = drift(build, "open descriptors", 2)
    return [build, f"{s['benign_requests']:,}", f"{s['hostile_requests']:,}", failures(build),
            f"{rss[0]:,} → {rss[1]:,} ({growth(*rss)})", f"{fds[0]} → {fds[1]}"]


def one_value(key):
    values = {summary(b)[key] for b in BUILDS}
    if len(values) != 1:
        raise ValueError(f"the soak runs differ in {key}: {values}")
    return values.pop()


def sample_gaps():
    gaps = []
    for build in BUILDS:
        times = [r[0] for r in samples(build)]
        gaps += [b - a for a, b in zip(times, times[1:])]
    return statistics.median(gaps)


def hostile_shares():
    return [summary(b)["hostile_requests"] / (summary(b)["hostile_requests"]
                                              + summary(b)["benign_requests"]) for b in BUILDS]


def figures():
    table = fmt.table(["build", "benign requests", "hostile requests", "failures",
                       "RSS first → last minute (KiB)", "descriptors"],
                      [row(b) for b in BUILDS], right=(1, 2))
    return {
        "table": table,
        "clients": str(one_value("clients")),
        "minutes": fmt.number(one_value("seconds") / 60),
        "hostile_share": fmt.span(hostile_shares(), fmt.pct),
        "sample_gap": fmt.number(sample_gaps()),
        "samples": fmt.span([len(samples(b)) for b in BUILDS]),
        "warmup": f"{WARMUP_SECONDS} s",
        "tolerance": fmt.pct(TOLERANCE),
    }

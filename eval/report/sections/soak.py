"""Figures of the soak runs: ten minutes of hostile and benign activations per executor build."""

import statistics

from report import fmt, records
from report.sections import _evaluation_util as ev

BUILDS = ev.EXECUTORS
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


def windows(build, column):
    """The medians of the first minute after the warm-up, of the minute at the run's middle and
    of the last minute, from samples.csv."""
    rows = samples(build)
    seconds = summary(build)["seconds"]
    total = WARMUP_SECONDS + seconds
    middle = WARMUP_SECONDS + seconds // 2

    def minute_from(start):
        return lower_median([r[column] for r in rows if start <= r[0] < start + WINDOW_SECONDS])

    last = lower_median([r[column] for r in rows if r[0] + WINDOW_SECONDS >= total])
    return minute_from(WARMUP_SECONDS), minute_from(middle), last


def drift(build, figure, column):
    """(first, middle, last) of one figure, recomputed from the samples and checked against the
    summary."""
    kept = next(d for d in summary(build)["drift"] if d["figure"] == figure)
    computed = windows(build, column)
    if computed != (kept["first_minute"], kept["middle_minute"], kept["last_minute"]):
        raise ValueError(f"soak {build}: samples.csv gives {figure} {computed}, summary.json "
                         f"{kept}")
    if computed[2] > computed[1] * (1 + TOLERANCE) or not kept["ok"]:
        raise ValueError(f"the prose says {build}'s {figure} stayed within its bound in the "
                         f"second half, the records say {computed}")
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
    return [ev.name(build), f"{s['benign_requests']:,}", f"{s['hostile_requests']:,}", failures(build),
            f"{rss[0]:,} → {rss[1]:,} → {rss[2]:,} ({growth(rss[1], rss[2])})",
            " → ".join(str(n) for n in fds)]


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
    for build in BUILDS:
        first, middle, _ = drift(build, "RSS (KiB)", 1)
        if first >= middle:
            raise ValueError(f"the prose says every build's RSS rose from the first minute to the "
                             f"middle; {build}'s went from {first} to {middle}")
    table = fmt.table(["build", "benign requests", "hostile requests", "failures",
                       "RSS: first minute → middle → last minute (KiB; second half)",
                       "descriptors"],
                      [row(b) for b in BUILDS], right=(1, 2))
    return {
        "table": table,
        "conditions": records.conditions_table(
            [(ev.name(b), f"soak/{b}/summary.json") for b in BUILDS]),
        "clients": str(one_value("clients")),
        "minutes": fmt.number(one_value("seconds") / 60),
        "hostile_share": fmt.span(hostile_shares(), fmt.pct),
        "sample_gap": fmt.number(sample_gaps()),
        "samples": fmt.span([len(samples(b)) for b in BUILDS]),
        "warmup": f"{WARMUP_SECONDS} s",
        "tolerance": fmt.pct(TOLERANCE),
    }

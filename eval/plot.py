#!/usr/bin/python3
"""Plots of the evaluation (eval/RESULTS.md) from the records `wasm-bench evaluate` wrote.

    /usr/bin/python3 eval/plot.py [RESULTS_DIR]   # default eval/results/evaluation; PNGs in DIR/plots

Reads DIR/<experiment>.csv.gz and DIR/summary.json; needs matplotlib, which on Debian 12 is
the package python3-matplotlib for the system's Python (scripts/prerequisites.sh eval installs
it). One PNG per experiment.
"""

import csv
import gzip
import json
import math
import os
import sys
from collections import defaultdict

try:
    import matplotlib
except ImportError:
    sys.exit(
        "plot.py: %s cannot import matplotlib; on Debian 12 install python3-matplotlib "
        "(scripts/prerequisites.sh eval) and run this with /usr/bin/python3" % sys.executable
    )

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"wasmtime": "#1f77b4", "wasmer": "#9467bd", "wamr": "#2ca02c", "docker": "#d62728", "native": "#7f7f7f"}
ORDER = ["wasmtime", "wasmer", "wamr", "docker", "native"]


def color(platform):
    return COLORS.get(platform.split("-")[0], None)


def load(directory, experiment):
    path = os.path.join(directory, f"{experiment}.csv.gz")
    if not os.path.exists(path):
        return []
    with gzip.open(path, "rt") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for key in ("level", "client", "seq", "status"):
            r[key] = int(r[key])
        for key in ("start_ns", "latency_ns"):
            r[key] = int(r[key])
        r["ready_ns"] = int(r["ready_ns"]) if r["ready_ns"] else None
        r["warmup"] = r["warmup"] == "1"
        r["cold"] = r["cold"] == "1"
    return rows


def platforms_of(rows):
    seen = {r["platform"] for r in rows}
    known = [p for p in ORDER if p in seen]
    return known + sorted(seen - set(known))


def percentile(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    rank = max(1, math.ceil(q * len(values)))
    return values[rank - 1]


def grouped(rows, *keys):
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in keys)].append(r)
    return groups


def rates(directory, experiment):
    """The closed-loop rates of summary.json: (platform, scenario, level) -> (mean over the
    measured windows, half-width of its 95 % confidence interval or 0)."""
    with open(os.path.join(directory, "summary.json")) as f:
        cells = json.load(f)["summary"]["cells"].get(experiment, [])
    return {(c["platform"], c["scenario"], c["level"]): (c["rate"] or 0.0, c.get("rate_ci95") or 0.0) for c in cells}


def bars(ax, platforms, groups, value, ylabel, title):
    """Grouped bars on a log scale: per group label, one bar per platform of value(platform, k)."""
    width = 0.8 / max(len(platforms), 1)
    for i, p in enumerate(platforms):
        ax.bar([k + i * width for k in range(len(groups))], [value(p, k) for k in range(len(groups))], width, color=color(p), label=p)
    ax.set_xticks([k + width * (len(platforms) - 1) / 2 for k in range(len(groups))])
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(path)


def plot_cold(directory, out):
    rows = load(directory, "cold")
    if not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    groups = grouped(rows, "platform", "level")
    for p in platforms_of(rows):
        levels = sorted({lvl for (pp, lvl) in groups if pp == p})
        first50 = [percentile([r["latency_ns"] / 1e6 for r in groups[(p, lvl)] if r["status"] == 200], 0.5) for lvl in levels]
        first99 = [percentile([r["latency_ns"] / 1e6 for r in groups[(p, lvl)] if r["status"] == 200], 0.99) for lvl in levels]
        ready50 = [percentile([r["ready_ns"] / 1e6 for r in groups[(p, lvl)] if r["ready_ns"] is not None], 0.5) for lvl in levels]
        axes[0].plot(levels, first50, "o-", color=color(p), label=f"{p} p50")
        axes[0].plot(levels, first99, "--", color=color(p), alpha=0.6, label=f"{p} p99")
        if p != "native":  # no container to make ready: started per activation
            axes[1].plot(levels, ready50, "o-", color=color(p), label=p)
    axes[0].set_title("Cold start: request to first result")
    axes[1].set_title("Cold start: request to ready (p50)")
    for ax in axes:
        ax.set_xlabel("simultaneous cold starts")
        ax.set_ylabel("ms (log)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].legend(fontsize=8)
    save(fig, out, "cold-start.png")


def plot_throughput(directory, out, experiment, title):
    rows = load(directory, experiment)
    if not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    groups = grouped(rows, "platform", "level")
    cells = rates(directory, experiment)
    scenario = rows[0]["scenario"]
    for p in platforms_of(rows):
        levels = sorted({lvl for (pp, lvl) in groups if pp == p})
        mean = [cells.get((p, scenario, lvl), (float("nan"), 0))[0] for lvl in levels]
        ci = [cells.get((p, scenario, lvl), (0, 0))[1] for lvl in levels]
        p99 = [percentile([r["latency_ns"] / 1e6 for r in groups[(p, lvl)] if not r["warmup"] and r["status"] == 200], 0.99) for lvl in levels]
        axes[0].errorbar(levels, mean, yerr=ci, fmt="o-", capsize=3, color=color(p), label=p)
        axes[1].plot(levels, p99, "o-", color=color(p), label=p)
    axes[0].set_title(f"{title}: throughput")
    axes[0].set_ylabel("activations/s")
    axes[1].set_title(f"{title}: p99 latency")
    axes[1].set_ylabel("ms")
    for ax in axes:
        ax.set_xlabel("concurrent clients")
        if experiment in ("io", "cold-rate"):
            ax.set_xscale("log", base=2)
        if experiment == "cold-rate":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, out, f"{experiment}.png")


def plot_mixed(directory, out):
    rows = load(directory, "mixed")
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for p in platforms_of(rows):
        own = [r for r in rows if r["platform"] == p]
        t0 = min(r["start_ns"] for r in own)
        buckets = defaultdict(int)
        for r in own:
            if r["status"] == 200:
                buckets[int((r["start_ns"] + r["latency_ns"] - t0) / 1e9)] += 1
        xs = sorted(buckets)
        ax.plot(xs, [buckets[x] for x in xs], "-", color=color(p), label=p)
    ax.set_title("Mixed load (clients joining at a fixed interval): throughput over time")
    ax.set_xlabel("seconds since the first client")
    ax.set_ylabel("activations completed per second")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, out, "mixed.png")


def plot_realistic(directory, out):
    rows = load(directory, "realistic")
    if not rows:
        return
    limits = sorted({r["level"] for r in rows})
    fig, axes = plt.subplots(1, len(limits), figsize=(6 * len(limits), 4.2), squeeze=False)
    for ax, limit in zip(axes[0], limits):
        part = [r for r in rows if r["level"] == limit]
        for p in platforms_of(part):
            own = [r for r in part if r["platform"] == p]
            values = sorted(r["latency_ns"] / 1e6 for r in own if r["status"] == 200)
            if not values:
                continue
            n = len(values)
            cold = sum(1 for r in own if r["cold"])
            ax.step(values, [(i + 1) / n for i in range(n)], where="post", color=color(p),
                    label=f"{p} ({100 * cold / len(own):.0f} % cold)")
        ax.set_xscale("log")
        ax.set_title(f"Realistic workload, concurrency limit {limit}: latency ECDF")
        ax.set_xlabel("latency from arrival, ms (log)")
        ax.set_ylabel("fraction of activations")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, out, "realistic.png")


def plot_access(directory, out):
    rows = load(directory, "access")
    if not rows:
        return
    patterns = ["single_client_multiple_access", "multiple_clients_single_access", "multiple_clients_multiple_access"]
    platforms = platforms_of(rows)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    def mean_latency(p, pattern):
        values = [r["latency_ns"] / 1e6 for r in rows if r["platform"] == p and r["scenario"] == pattern and r["status"] == 200]
        return sum(values) / len(values) if values else float("nan")

    bars(ax, platforms, [p.replace("_", " ") for p in patterns], lambda p, k: mean_latency(p, patterns[k]),
         "mean latency, ms (log)", "Access patterns (Hall and Ramachandran)")
    save(fig, out, "access.png")


def plot_memory(directory, out):
    path = os.path.join(directory, "summary.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        memory = json.load(f).get("memory") or []
    if not memory:
        return
    variants = ["lto", "release", "debug"]
    platforms = [p for p in ORDER if any(m["platform"] == p for m in memory)]
    fig, ax = plt.subplots(figsize=(9, 4.2))

    def per_container(p, k):
        return next((m["per_container_mib"] for m in memory if m["platform"] == p and m["variant"] == variants[k]), float("nan"))

    bars(ax, platforms, [f"hash ({v})" for v in variants], per_container,
         "MiB per warm container (log)", "Memory per warm container")
    save(fig, out, "memory.png")


def plot_capacity(directory, out):
    path = os.path.join(directory, "summary.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        summary = json.load(f)
    rows = summary.get("capacity") or []
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for row in rows:
        # The search probes rates out of order (a ladder, then bisection): plot them by rate.
        probes = sorted(row["levels"], key=lambda level: level[0])
        rates = [level[0] for level in probes]
        p99 = [level[1] if level[1] is not None else float("nan") for level in probes]
        sizing = row.get("sizing", "measured")
        ax.plot(rates, p99, "o-" if sizing == "reservation" else "s--", color=color(row["platform"]),
                label=f'{row["platform"]}, {sizing} ({row["container_mb"]:.2f} MB, {row["slots"]} slots)')
    ax.axhline(summary["summary"]["capacity_p99_ms"], color="black", linestyle=":", label="p99 target")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title("Capacity in 1 GiB: the realistic workload at rising arrival rates")
    ax.set_xlabel("arrivals per second (log)")
    ax.set_ylabel("p99 latency, ms (log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, out, "capacity.png")


def plot_threading(directory, out):
    rows = load(directory, "threading")
    if not rows:
        return
    workloads = ["cpu", "io", "mixed"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    groups = grouped(rows, "platform", "scenario", "level")
    cells = rates(directory, "threading")
    for ax, workload in zip(axes, workloads):
        for p in sorted({r["platform"] for r in rows}):
            levels = sorted({lvl for (pp, w, lvl) in groups if pp == p and w == workload})
            mean = [cells.get((p, workload, lvl), (float("nan"), 0))[0] for lvl in levels]
            ci = [cells.get((p, workload, lvl), (0, 0))[1] for lvl in levels]
            style = "o-" if p.endswith("-pool") else "s--"
            ax.errorbar(levels, mean, yerr=ci, fmt=style, capsize=3, color=color(p), label=p)
        ax.set_title(f"{workload}: guest calls on pool vs async workers")
        ax.set_xlabel("concurrent clients")
        ax.set_xscale("log", base=2)
        ax.set_ylabel("activations/s")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, out, "threading.png")


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "eval/results/evaluation"
    out = os.path.join(directory, "plots")
    os.makedirs(out, exist_ok=True)
    plot_cold(directory, out)
    plot_throughput(directory, out, "cold-rate", "Cold starts at saturation")
    plot_throughput(directory, out, "io", "I/O-bound (net)")
    plot_throughput(directory, out, "cpu", "CPU-bound (hash)")
    plot_mixed(directory, out)
    plot_realistic(directory, out)
    plot_capacity(directory, out)
    plot_access(directory, out)
    plot_memory(directory, out)
    plot_threading(directory, out)


if __name__ == "__main__":
    main()

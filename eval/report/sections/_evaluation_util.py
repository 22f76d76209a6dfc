"""The evaluation section's records, looked up by experiment, platform and level, and its tables."""

import functools
import re
from datetime import datetime, timezone

from report import fmt, records

MAIN = "evaluation/summary.json"
REALISTIC = "evaluation/realistic/summary.json"
JMETER = "evaluation/jmeter"
EXECUTORS = ("wasmtime", "wasmer", "wamr")  # every executor build, in the order runs take them
BASELINES = ("docker", "native")
MODES = ("async", "pool", "blocking-worker")


@functools.lru_cache(maxsize=None)
def run(relative=MAIN):
    return records.json_of(relative)


def sizes():
    return run()["sizes"]


def platforms():
    return run()["platforms"]


def executors():
    """The executor builds of the run, in its order (wasmtime, wasmer, wamr)."""
    return [p for p in platforms() if p not in BASELINES]


def name(platform):
    """A platform as the prose names it: wasmtime, wasmer, WAMR, Docker."""
    return {"wamr": "WAMR", "docker": "Docker"}.get(platform, platform)


def cells(experiment, relative=MAIN):
    found = run(relative)["summary"]["cells"][experiment]
    if not found:
        raise KeyError(f"{relative}: no {experiment} cells")
    return found


def cell(experiment, platform, level=None, scenario=None, relative=MAIN):
    for c in cells(experiment, relative):
        if (c["platform"] == platform and (level is None or c["level"] == level)
                and (scenario is None or c["scenario"] == scenario)):
            return c
    raise KeyError(f"{experiment}: no cell {platform} {level} {scenario}")


def levels(experiment, relative=MAIN):
    return sorted({c["level"] for c in cells(experiment, relative)})


def linear_fit(series):
    """Least-squares slope and r² of a {level: value} series."""
    xs, ys = zip(*sorted(series.items()))
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return sxy / sxx, sxy ** 2 / sxx / syy


def cpu_totals():
    """Each platform's CPU-bound rates summed over the levels."""
    return {p: sum(cell("cpu", p, lv)["rate"] for lv in levels("cpu")) for p in platforms()}


def one(x):
    return fmt.fixed(x, 1)


def two(x):
    return fmt.fixed(x, 2)


def change(fraction):
    """A signed change as the tables print it: −99.0 %."""
    return fmt.pct(fraction, 1).replace("-", "−")


def ms2(x):
    """Two significant digits below 10 ms, three above: '2.3 ms', '15.7 ms', '238 ms'."""
    return fmt.ms(x, 2 if x < 10 else 3)


def ratio(x):
    return f"{fmt.fixed(x, 2)}×"


def duration(ms):
    """Milliseconds below a second, seconds above: '238 ms', '3.2 s'."""
    return f"{fmt.number(ms / 1000, 2)} s" if ms >= 1000 else fmt.ms(ms, 2)


def rate_span(values):
    def digits(x):
        return fmt.number(x, 2 if x < 10 else 3)

    low, high = digits(min(values)), digits(max(values))
    return f"{low}/s" if low == high else f"{low}–{high}/s"


def cold_table():
    header = ["i", *platforms()] + [f"{p} vs docker (p50 first result)" for p in executors()]
    rows = []
    for level in levels("cold"):
        row = [level]
        for p in platforms():
            c = cell("cold", p, level)
            low, high = c["p50_ci95_ms"]
            row.append(f"{one(c['ready_p50_ms'])} / {one(c['p50_ms'])} [{one(low)}–{one(high)}]"
                       f" / {one(c['p99_ms'])}")
        docker = cell("cold", "docker", level)["p50_ms"]
        row += [change(cell("cold", p, level)["p50_ms"] / docker - 1) for p in executors()]
        rows.append(row)
    return fmt.table(header, rows)


def rate_cell(c):
    return f"{one(c['rate'])} ± {one(c['rate_ci95'])} ({one(c['p50_ms'])} / {one(c['p99_ms'])})"


def io_table():
    header = ["clients", *platforms()] + [f"{p} / docker" for p in executors()]
    rows = []
    for level in levels("io"):
        docker = cell("io", "docker", level)["rate"]
        rows.append([level, *(rate_cell(cell("io", p, level)) for p in platforms()),
                     *(two(cell("io", p, level)["rate"] / docker) for p in executors())])
    return fmt.table(header, rows)


def cpu_table():
    header = ["clients", *platforms()]
    for p in executors():
        header += [f"{p} / docker", f"{p} / native"]
    rows = []
    for level in levels("cpu"):
        row = [level, *(rate_cell(cell("cpu", p, level)) for p in platforms())]
        for p in executors():
            mine = cell("cpu", p, level)["rate"]
            row += [two(mine / cell("cpu", "docker", level)["rate"]),
                    two(mine / cell("cpu", "native", level)["rate"])]
        rows.append(row)
    return fmt.table(header, rows)


def mixed_plateau():
    return run()["summary"]["mixed_plateau"]


def mixed_table():
    plateau = mixed_plateau()
    rows = [[p, one(plateau[p]), two(plateau[p] / plateau["docker"])] for p in platforms()]
    return fmt.table(["platform", "activations/s", "vs docker"], rows, right=(1, 2))


def realistic_table():
    header = ["platform", "concurrency limit", "requests", "failed", "cold starts", "cold share",
              "p50 ms", "p90 ms", "p99 ms", "mean ms"]
    rows = []
    for p in platforms():
        for limit in levels("realistic", REALISTIC):
            c = cell("realistic", p, limit, relative=REALISTIC)
            rows.append([p, limit, c["requests"], c["errors"], c["cold"],
                         fmt.pct(c["cold"] / c["requests"], 1),
                         *(one(c[k]) for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms"))])
    return fmt.table(header, rows, right=tuple(range(1, 10)))


ACCESS = ("single_client_multiple_access", "multiple_clients_single_access",
          "multiple_clients_multiple_access")


def access_table():
    rows = []
    for scenario in ACCESS:
        level = cell("access", "docker", scenario=scenario)["level"]
        row = [f"{scenario.replace('_', ' ')} ({level})"]
        for p in platforms():
            c = cell("access", p, scenario=scenario)
            row.append(f"{one(c['mean_ms'])} / {one(c['p50_ms'])} / {one(c['p99_ms'])}")
        rows.append(row)
    return fmt.table(["pattern (clients)", *platforms()], rows)


def first_call_ms(platform, scenario="single_client_multiple_access"):
    """The latency of a platform's first (cold) call in an access pattern, from the raw rows."""
    for row in records.csv_rows("evaluation/access.csv.gz"):
        if row["platform"] == platform and row["scenario"] == scenario and row["seq"] == "0":
            if row["cold"] != "1":
                raise ValueError(f"{platform}'s first call in {scenario} was not a cold start")
            return int(row["latency_ns"]) / 1e6
    raise KeyError(f"access.csv.gz: no first call of {platform}")


def memory_rows():
    return run()["memory"]


def memory_row(platform, variant):
    for row in memory_rows():
        if row["platform"] == platform and row["variant"] == variant:
            return row
    raise KeyError(f"memory: no row {platform} {variant}")


def growth_mib(row):
    """A platform's whole growth over the containers: what the per-container figure divides."""
    return row["per_container_mib"] * row["containers"]


def memory_table():
    containers = {row["containers"] for row in memory_rows()}
    if len(containers) != 1:
        raise ValueError(f"memory rows of different sizes {containers}; the table says one")
    header = ["platform", "build", "idle MiB", f"total over {containers.pop()} containers, MiB",
              "MiB per warm container", "warm containers per GiB", "vs docker"]
    rows = []
    for row in memory_rows():
        docker = memory_row("docker", row["variant"])["per_gib"]
        rows.append([row["platform"], row["variant"], one(row["idle_mib"]), one(growth_mib(row)),
                     two(row["per_container_mib"]), f"{row['per_gib']:,.0f}",
                     fmt.times(row["per_gib"] / docker, 2)])
    return fmt.table(header, rows, right=(2, 3, 4, 5, 6))


def threading_rate(runtime, mode, workload, level):
    return cell("threading", f"{runtime}-{mode}", level, workload)["rate"]


def threading_modes(runtime):
    names = {c["platform"] for c in cells("threading")}
    return [m for m in MODES if f"{runtime}-{m}" in names]


def threading_table():
    header = ["runtime", "workload", "clients", "async", "pool", "blocking worker", "async / pool",
              "pool / blocking worker"]
    rows = []
    for runtime in executors():
        modes = threading_modes(runtime)
        for workload in sorted({c["scenario"] for c in cells("threading")}):
            for level in levels("threading"):
                got = {m: threading_rate(runtime, m, workload, level) for m in modes}
                ratio = (lambda a, b: two(got[a] / got[b]) if a in got and b in got else "–")
                rows.append([runtime, workload, level,
                             *(one(got[m]) if m in got else "–" for m in MODES),
                             ratio("async", "pool"), ratio("pool", "blocking-worker")])
    return fmt.table(header, rows)


JMETER_PLANS = ("cold-start", "mixed", "realistic")
JMETER_PLATFORMS = ("wasmtime", "docker")


@functools.lru_cache(maxsize=None)
def jmeter(platform, plan):
    """One line of a platform's JMeter summary.txt as numbers: samples, median, p95, cold, req/s."""
    text = records.path(f"{JMETER}/{platform}/summary.txt").read_text()
    line = next(li for li in text.splitlines() if li.split() and li.split()[0] == plan)
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    values = {k: float(fields[k].removesuffix("ms")) for k in ("samples", "median", "p95", "cold")}
    values["errors"] = int(fields["errors"])
    values["rate"] = float(re.search(r"([\d.]+) req/s", line).group(1))
    rows = records.csv_rows(f"{JMETER}/{platform}/{plan}.csv")
    if len(rows) != values["samples"]:
        raise ValueError(f"JMeter {platform} {plan}: summary.txt and the CSV disagree")
    values["threads"] = max(int(r["grpThreads"]) for r in rows)
    values["start_ms"] = min(int(r["timeStamp"]) for r in rows)
    return values


def jmeter_provenance(platform, plan):
    """When, at which commit and on what machine a platform's plan ran (eval/jmeter/run.sh)."""
    return records.json_of(f"{JMETER}/{platform}/{plan}.provenance.json")


def jmeter_date():
    first = min(jmeter(p, plan)["start_ms"] for p in JMETER_PLATFORMS for plan in JMETER_PLANS)
    return datetime.fromtimestamp(first / 1000, tz=timezone.utc).date().isoformat()


def jmeter_cell(platform, plan):
    j = jmeter(platform, plan)
    if plan == "cold-start":
        return f"median {fmt.ms(j['median'])}, p95 {fmt.ms(j['p95'])}"
    text = f"{j['samples']:.0f} samples, {fmt.number(j['rate'])} req/s"
    if plan == "realistic":
        text += f", median {fmt.ms(j['median'])}"
    text += f", p95 {fmt.ms(j['p95'])}"
    return text + (f", {j['cold']:.0f} cold" if plan == "realistic" else "")


def jmeter_table():
    rows = []
    for plan in JMETER_PLANS:
        j = jmeter("wasmtime", plan)
        if plan == "cold-start":
            label = f"cold-start ({j['samples']:.0f} cold starts, {j['threads']} at once)"
        else:
            label = f"{plan} ({j['threads']} threads)"
        rows.append([label, *(jmeter_cell(p, plan) for p in JMETER_PLATFORMS)])
    return fmt.table(["plan", "wasmtime", "Docker"], rows)

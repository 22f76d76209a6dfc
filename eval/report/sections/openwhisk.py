"""Figures of the runs through real OpenWhisk (JMeter against the REST API, wasm vs Docker
factory), repeated on one build: each figure the mean of the runs with its interval across them."""

import re
from datetime import datetime, timedelta

from report import fmt, records

RUNS = "openwhisk/run-*/summary.json"
SIDES = ("wasm", "docker")
# run.sh's full-mode ramp of the mixed plan (ramp_interval); meta.json does not keep it.
MIXED_RAMP = "5 s"


def runs():
    """The runs' directories under eval/results/, checked: three or more, of one executor build
    and one OpenWhisk commit."""
    def build(record):
        meta = record["meta"]
        return meta["wasm_executor"].split("(")[-1].split(",")[0], meta["openwhisk_commit"]

    return [r.rsplit("/", 1)[0] for r in records.repeated(RUNS, build=build)]


def summary(run):
    return records.json_of(f"{run}/summary.json")


def meta(run):
    return summary(run)["meta"]


def level(run, name):
    return summary(run)["levels"][name]


def invokes(run, side, name):
    """The raw JMeter rows of one level, the setUp group's action creations left out."""
    return [row for row in records.csv_rows(f"{run}/{side}/{name}.csv")
            if not row["label"].startswith("create")]


def lower(wasm, docker):
    """How much lower the wasm figure is, as a share of Docker's."""
    return 1 - wasm / docker


def throughput(rows):
    """Successful activations per second over the rows' span."""
    ok = [r for r in rows if r["success"].strip().lower() == "true"]
    start = min(int(r["timeStamp"]) for r in rows)
    end = max(int(r["timeStamp"]) + int(r["elapsed"]) for r in rows)
    return len(ok) / ((end - start) / 1000)


def mixed_rates(run):
    """Whole-run and all-threads activations/s per side in one run, recomputed from the raw rows
    and checked against summary.json."""
    rates = {}
    for side in SIDES:
        rows = invokes(run, side, "mixed")
        top = max(int(r["grpThreads"]) for r in rows)
        whole = throughput(rows)
        plateau = throughput([r for r in rows if int(r["grpThreads"]) >= top])
        kept = level(run, "mixed")[side]
        if round(whole, 2) != kept["throughput_rps"] or round(plateau, 2) != kept["plateau_rps"]:
            raise ValueError(f"{run}: mixed on {side}: the raw rows give {whole:.2f} and "
                             f"{plateau:.2f} activations/s, summary.json {kept['throughput_rps']} "
                             f"and {kept['plateau_rps']}")
        rates[side] = (whole, plateau, top)
    return rates


def thesis_cells(run):
    """The thesis's column of summary.md's 'Next to the thesis' table (cited, not measured here)."""
    text = records.path(f"{run}/summary.md").read_text()
    cells = {}
    for row in ("cold start vs Docker", "mixed workload throughput vs Docker"):
        match = re.search(rf"^\| {re.escape(row)} \| ([^|]+) \|", text, re.M)
        cells[row] = match.group(1).strip()
    return cells


def conditions_table(found):
    rows = []
    for i, run in enumerate(found, 1):
        m = meta(run)
        start = datetime.strptime(m["date"], "%Y-%m-%dT%H:%M:%SZ")
        end = start + timedelta(seconds=m["seconds_total"])
        rows.append([str(i), f"{start:%Y-%m-%d %H:%M}–{end:%H:%M}", f"`{m['openwhisk_commit'][:8]}`",
                     m["machine"], f"{fmt.load(m['load_before'])} → {fmt.load(m['load_after'])}"])
    return fmt.table(["run", "UTC", "OpenWhisk", "machine", "load average, before → after"], rows)


def pool(found):
    """The pool and action memory, the same in every run."""
    shapes = {(int(re.search(r"user-memory (\d+) m", meta(r)["servers"]).group(1)),
               int(re.search(r"action memory (\d+) MB", meta(r)["settings"]).group(1)))
              for r in found}
    if len(shapes) != 1:
        raise ValueError(f"the runs differ in pool or action memory: {shapes}")
    return shapes.pop()


def no_failures(found):
    """Guards 'no activation failed on either side'."""
    for run in found:
        for name, entry in summary(run)["levels"].items():
            for side in SIDES:
                if entry[side]["errors"] or entry[side]["create_errors"]:
                    raise ValueError(f"the prose says no activation failed, but {name} on {side} "
                                     f"in {run} had {entry[side]['errors']} errors")
    return "no"


def pair(found, name, side, key):
    """'89 / 181 ms': the runs' mean p50 / mean p95 of one distribution."""
    stats = [level(r, name)[side][key] for r in found]
    return f"{fmt.number(fmt.mean([s['p50'] for s in stats]))} / {fmt.ms(fmt.mean([s['p95'] for s in stats]))}"


def p50_ratios(found, name, key="response_ms"):
    """Docker's p50 over wasm's, run by run."""
    return [level(r, name)["docker"][key]["p50"] / level(r, name)["wasm"][key]["p50"] for r in found]


def lower_shares(found, name, key="response_ms"):
    return [lower(level(r, name)["wasm"][key]["p50"], level(r, name)["docker"][key]["p50"])
            for r in found]


def latency_row(found, label, name, key="response_ms"):
    return [label, pair(found, name, "wasm", key), pair(found, name, "docker", key),
            fmt.mean_and_interval(p50_ratios(found, name, key), fmt.times)]


def ratio_row(label, wasm, docker):
    """Both sides' mean activations/s and wasm's over Docker's, run by run, as mean [interval]."""
    return [label, fmt.number(fmt.mean(wasm)), fmt.number(fmt.mean(docker)),
            fmt.mean_and_interval([w / d for w, d in zip(wasm, docker)], fmt.times)]


def mixed_row(found, label, index):
    rates = [mixed_rates(r) for r in found]
    return ratio_row(label, [x["wasm"][index] for x in rates], [x["docker"][index] for x in rates])


def throughput_row(found, label, name):
    return ratio_row(label, *([level(r, name)[side]["throughput_rps"] for r in found]
                              for side in SIDES))


def realistic_shape(found):
    """Clients, actions created and the share of requests to the hot actions, from the raw rows."""
    clients = {max(int(r["grpThreads"]) for r in invokes(run, s, "realistic"))
               for run in found for s in SIDES}
    actions = {level(run, "realistic")[s]["creates"] for run in found for s in SIDES}
    if len(clients) != 1 or len(actions) != 1:
        raise ValueError(f"realistic: the sides or runs differ in clients {clients} or actions {actions}")
    hot = [sum(r["label"].startswith("hot") for r in invokes(run, s, "realistic"))
           / len(invokes(run, s, "realistic")) for run in found for s in SIDES]
    return clients.pop(), actions.pop(), hot


def table(found, mixed_threads, slots):
    clients, actions, _ = realistic_shape(found)
    warm = {level(r, "warm")["wasm"]["samples"] for r in found}
    rows = [
        latency_row(found, "cold start, 1 at a time (`echo`): whole blocking invoke, p50 / p95", "cold-1"),
        latency_row(found, "… accepted → `/run` starts (`waitTime + initTime`), p50 / p95", "cold-1",
                    "wait_init_ms"),
        latency_row(found, f"warm (`echo`, {fmt.span(warm)} in a row), p50 / p95", "warm"),
        latency_row(found, "16 cold starts at once, p50 / p95", "cold-16"),
        latency_row(found, "32 cold starts at once, p50 / p95", "cold-32"),
        mixed_row(found, f"mixed (`hash`/`net`, a thread joins every {MIXED_RAMP} up to "
                        f"{mixed_threads}): activations/s over the whole run", 0),
        mixed_row(found, f"… only the phase with all {mixed_threads} threads running", 1),
        latency_row(found, f"realistic ({clients} clients, {actions} actions for {slots} slots), "
                           "p50 / p95", "realistic"),
        throughput_row(found, "… its activations/s", "realistic"),
    ]
    return fmt.table(["level", "wasm (mean of the runs)", "Docker (mean of the runs)",
                      "wasm faster by: mean [95 % interval across runs]"], rows)


def per_run_table(found):
    """The headline figures run by run."""
    def row(label, values, unit):
        return [label, *(unit(v) for v in values), fmt.mean_and_interval(values, unit)]

    mixed = [mixed_rates(r) for r in found]
    rows = [row("cold start 1 at a time: wasm's p50 lower than Docker's by",
                lower_shares(found, "cold-1"), fmt.pct),
            row("32 at once: wasm's p50 lower by", lower_shares(found, "cold-32"), fmt.pct),
            row("mixed, whole run: wasm's activations/s over Docker's",
                [m["wasm"][0] / m["docker"][0] for m in mixed], fmt.times)]
    return fmt.table(["figure", *(f"run {i}" for i in range(1, len(found) + 1)),
                      "mean [95 % interval across runs]"], rows,
                     right=tuple(range(1, len(found) + 2)))


def figures():
    found = runs()
    rates = [mixed_rates(r) for r in found]
    threads = {x[s][2] for x in rates for s in SIDES}
    if len(threads) != 1:
        raise ValueError(f"mixed: the sides or runs reached different thread counts {threads}")
    mixed_threads = threads.pop()
    pool_mb, action_mb = pool(found)
    wasm_init = [fmt.mean([level(r, n)["wasm"]["init_ms"]["p50"] for r in found])
                 for n in ("cold-1", "cold-16", "cold-32")]
    _, _, hot = realistic_shape(found)
    thesis = thesis_cells(found[0])
    cold = {s: sum(level(r, "mixed")[s]["cold"] for r in found) for s in SIDES}
    samples = {s: sum(level(r, "mixed")[s]["samples"] for r in found) for s in SIDES}
    whole = [x["wasm"][0] / x["docker"][0] for x in rates]
    plateau = [x["wasm"][1] / x["docker"][1] for x in rates]
    return {
        "runs": str(len(found)),
        "conditions": conditions_table(found),
        "ow_commit": meta(found[0])["openwhisk_commit"][:8],
        "cpus": str(meta(found[0])["cpus"]),
        "pool_mb": f"{pool_mb} MB",
        "action_mb": f"{action_mb} MB",
        "slots": str(pool_mb // action_mb),
        "table": table(found, mixed_threads, pool_mb // action_mb),
        "per_run_table": per_run_table(found),
        "failures": no_failures(found),
        "mixed_threads": str(mixed_threads),
        "mixed_whole": fmt.mean_and_interval(whole, fmt.times),
        "mixed_whole_wasm": fmt.number(fmt.mean([x["wasm"][0] for x in rates])),
        "mixed_whole_docker": fmt.number(fmt.mean([x["docker"][0] for x in rates])),
        "mixed_plateau": fmt.mean_and_interval(plateau, fmt.times),
        "mixed_plateau_docker": fmt.number(fmt.mean([x["docker"][1] for x in rates])),
        "cold1_lower": fmt.mean_and_interval(lower_shares(found, "cold-1"), fmt.pct),
        "cold32_lower": fmt.mean_and_interval(lower_shares(found, "cold-32"), fmt.pct),
        "wasm_init_p50": fmt.span(wasm_init, fmt.ms),
        "wasm_wait_crowd": fmt.span([fmt.mean([level(r, n)["wasm"]["wait_ms"]["p50"] for r in found])
                                     for n in ("cold-16", "cold-32")], fmt.ms),
        "mixed_cold_docker": f"{cold['docker']:,} of {samples['docker']:,}",
        "mixed_cold_wasm": f"{cold['wasm']:,} of {samples['wasm']:,}",
        "hot_share": fmt.span(hot, fmt.pct),
        "thesis_cold": thesis["cold start vs Docker"],
        "thesis_mixed": thesis["mixed workload throughput vs Docker"],
    }

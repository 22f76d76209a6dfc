"""Figures of the run through real OpenWhisk (JMeter against the REST API, wasm vs Docker factory)."""

import re
from datetime import datetime, timedelta

from report import fmt, records

RUN = "openwhisk"
SIDES = ("wasm", "docker")
# run.sh's full-mode ramp of the mixed plan (ramp_interval); meta.json does not keep it.
MIXED_RAMP = "5 s"


def summary():
    return records.json_of(f"{RUN}/summary.json")


def level(name):
    return summary()["levels"][name]


def invokes(side, name):
    """The raw JMeter rows of one level, the setUp group's action creations left out."""
    return [row for row in records.csv_rows(f"{RUN}/{side}/{name}.csv")
            if not row["label"].startswith("create")]


def lower(wasm, docker):
    """How much lower the wasm figure is, as a share of Docker's: '83 %'."""
    return fmt.pct(1 - wasm / docker)


def pair(stats, key, unit=fmt.ms):
    """'89 / 181 ms': p50 / p95 of one distribution."""
    p50, p95 = stats[key]["p50"], stats[key]["p95"]
    return f"{fmt.number(p50)} / {unit(p95)}"


def latency_row(label, name, key="response_ms", note=False):
    wasm, docker = level(name)["wasm"], level(name)["docker"]
    ratio = fmt.times(docker[key]["p50"] / wasm[key]["p50"])
    if note:
        ratio += f" ({lower(wasm[key]['p50'], docker[key]['p50'])} lower)"
    return [label, pair(wasm, key), pair(docker, key), ratio]


def p50_row(label, name, key):
    wasm, docker = level(name)["wasm"], level(name)["docker"]
    a, b = wasm[key]["p50"], docker[key]["p50"]
    return [label, fmt.ms(a), fmt.ms(b), f"{fmt.times(b / a)} ({lower(a, b)} lower)"]


def throughput(rows):
    """Successful activations per second over the rows' span."""
    ok = [r for r in rows if r["success"].strip().lower() == "true"]
    start = min(int(r["timeStamp"]) for r in rows)
    end = max(int(r["timeStamp"]) + int(r["elapsed"]) for r in rows)
    return len(ok) / ((end - start) / 1000)


def mixed_rates():
    """Whole-run and all-threads activations/s per side, recomputed from the raw rows and checked
    against summary.json."""
    rates = {}
    for side in SIDES:
        rows = invokes(side, "mixed")
        top = max(int(r["grpThreads"]) for r in rows)
        whole = throughput(rows)
        plateau = throughput([r for r in rows if int(r["grpThreads"]) >= top])
        kept = level("mixed")[side]
        if round(whole, 2) != kept["throughput_rps"] or round(plateau, 2) != kept["plateau_rps"]:
            raise ValueError(f"mixed on {side}: the raw rows give {whole:.2f} and {plateau:.2f} "
                             f"activations/s, summary.json {kept['throughput_rps']} and "
                             f"{kept['plateau_rps']}")
        rates[side] = (whole, plateau, top)
    return rates


def thesis_cells():
    """The thesis's column of summary.md's 'Next to the thesis' table (cited, not measured here)."""
    text = records.path(f"{RUN}/summary.md").read_text()
    cells = {}
    for row in ("cold start vs Docker", "mixed workload throughput vs Docker"):
        match = re.search(rf"^\| {re.escape(row)} \| ([^|]+) \|", text, re.M)
        cells[row] = match.group(1).strip()
    return cells


def conditions():
    meta = summary()["meta"]
    start = datetime.strptime(meta["date"], "%Y-%m-%dT%H:%M:%SZ")
    end = start + timedelta(seconds=meta["seconds_total"])
    pool = int(re.search(r"user-memory (\d+) m", meta["servers"]).group(1))
    action = int(re.search(r"action memory (\d+) MB", meta["settings"]).group(1))
    return {
        "date": start.strftime("%Y-%m-%d"),
        "start": start.strftime("%H:%M"),
        "end": end.strftime("%H:%M"),
        "ow_commit": meta["openwhisk_commit"][:8],
        "pool_mb": f"{pool} MB",
        "action_mb": f"{action} MB",
        "slots": str(pool // action),
        "load_before": fmt.load(meta["load_before"]),
        "load_after": fmt.load(meta["load_after"]),
        "cpus": str(meta["cpus"]),
    }


def no_failures():
    """Guards 'no activation failed on either side'."""
    for name, entry in summary()["levels"].items():
        for side in SIDES:
            if entry[side]["errors"] or entry[side]["create_errors"]:
                raise ValueError(f"the prose says no activation failed, but {name} on {side} "
                                 f"had {entry[side]['errors']} errors")
    return "no"


def realistic_row(clients, actions):
    wasm, docker = level("realistic")["wasm"], level("realistic")["docker"]
    w, d = wasm["response_ms"], docker["response_ms"]
    label = (f"realistic ({clients} clients, {actions} actions for {conditions()['slots']} "
             "slots), p50 / p95, activations/s")
    return [label, f"{pair(wasm, 'response_ms')}, {fmt.number(wasm['throughput_rps'])} /s",
            f"{pair(docker, 'response_ms')}, {fmt.number(docker['throughput_rps'])} /s",
            f"{fmt.times(d['p50'] / w['p50'])} / {fmt.times(d['p95'] / w['p95'])}, "
            f"{fmt.times(wasm['throughput_rps'] / docker['throughput_rps'])}"]


def realistic_shape():
    """Clients, actions created and the share of requests to the hot actions, from the raw rows."""
    clients = {max(int(r["grpThreads"]) for r in invokes(s, "realistic")) for s in SIDES}
    actions = {level("realistic")[s]["creates"] for s in SIDES}
    if len(clients) != 1 or len(actions) != 1:
        raise ValueError(f"realistic: the two sides differ in clients {clients} or actions {actions}")
    hot = [sum(r["label"].startswith("hot") for r in invokes(s, "realistic"))
           / len(invokes(s, "realistic")) for s in SIDES]
    return clients.pop(), actions.pop(), hot


def table(rates, mixed_threads):
    rows = [
        latency_row("cold start, 1 at a time (`echo`): whole blocking invoke, p50 / p95", "cold-1",
                    note=True),
        p50_row("… accepted → `/run` starts (`waitTime + initTime`), p50", "cold-1", "wait_init_ms"),
        latency_row(f"warm (`echo`, {level('warm')['wasm']['samples']} in a row), p50 / p95",
                    "warm"),
        latency_row("16 cold starts at once, p50 / p95", "cold-16"),
        latency_row("32 cold starts at once, p50 / p95", "cold-32", note=True),
        [f"mixed (`hash`/`net`, a thread joins every {MIXED_RAMP} up to {mixed_threads}): "
         "activations/s over the whole run",
         fmt.number(rates["wasm"][0]), fmt.number(rates["docker"][0]),
         f"**{fmt.times(rates['wasm'][0] / rates['docker'][0])}**"],
        [f"… only the phase with all {mixed_threads} threads running",
         fmt.number(rates["wasm"][1]), fmt.number(rates["docker"][1]),
         fmt.times(rates["wasm"][1] / rates["docker"][1])],
    ]
    clients, actions, _ = realistic_shape()
    rows.append(realistic_row(clients, actions))
    return fmt.table(["level", "wasm", "Docker", "wasm faster by"], rows)


def figures():
    rates = mixed_rates()
    threads = {rates[s][2] for s in SIDES}
    if len(threads) != 1:
        raise ValueError(f"mixed: the two sides reached different thread counts {threads}")
    mixed_threads = threads.pop()
    cold = {n: level(n) for n in ("cold-1", "cold-16", "cold-32")}
    wasm_init = [cold[n]["wasm"]["init_ms"]["p50"] for n in cold]
    mixed = level("mixed")
    _, _, hot = realistic_shape()
    thesis = thesis_cells()
    figures = dict(conditions())
    figures.update({
        "table": table(rates, mixed_threads),
        "failures": no_failures(),
        "mixed_threads": str(mixed_threads),
        "mixed_whole": fmt.times(rates["wasm"][0] / rates["docker"][0]),
        "mixed_whole_wasm": fmt.number(rates["wasm"][0]),
        "mixed_whole_docker": fmt.number(rates["docker"][0]),
        "mixed_plateau": fmt.times(rates["wasm"][1] / rates["docker"][1]),
        "mixed_plateau_docker": fmt.number(rates["docker"][1]),
        "cold1_lower": lower(cold["cold-1"]["wasm"]["response_ms"]["p50"],
                             cold["cold-1"]["docker"]["response_ms"]["p50"]),
        "cold32_lower": lower(cold["cold-32"]["wasm"]["response_ms"]["p50"],
                              cold["cold-32"]["docker"]["response_ms"]["p50"]),
        "wasm_init_p50": fmt.span(wasm_init, fmt.ms),
        "wasm_wait_crowd": fmt.span([cold[n]["wasm"]["wait_ms"]["p50"]
                                     for n in ("cold-16", "cold-32")], fmt.ms),
        "mixed_cold_docker": f"{mixed['docker']['cold']:,} of {mixed['docker']['samples']:,}",
        "mixed_cold_wasm": f"{mixed['wasm']['cold']:,} of {mixed['wasm']['samples']:,}",
        "hot_share": fmt.span(hot, fmt.pct),
        "thesis_cold": thesis["cold start vs Docker"],
        "thesis_mixed": thesis["mixed workload throughput vs Docker"],
    })
    return figures

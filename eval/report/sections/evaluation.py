"""Figures of the evaluation against Docker: experiments 1-8 and the JMeter plans."""

from report import fmt, records
from report.sections import _evaluation_util as ev
from report.sections._evaluation_util import cell, duration, ms2, rate_span, ratio

SERVER_MS = 300  # the `net` action's server answers after this long (a configured delay)


def require(holds, claim):
    if not holds:
        raise ValueError(f"the evaluation section says {claim}, but the records do not")


def conditions():
    first, then = ev.run(), ev.run(ev.REALISTIC)
    machine, second = first["machine"], then["machine"]
    same = ("cpu", "logical_cpus", "kernel", "memory")
    require(all(machine[k] == second[k] for k in same), "both runs were on one machine")
    require(first["commit"] == then["commit"], "both runs were at one commit")
    require(first["pinning"] is None and not first["quick"], "no pinning, full sizes")
    s = ev.sizes()
    return {
        "cpus": machine["logical_cpus"],
        "cpu": machine["cpu"],
        "memory": f"{fmt.number(int(machine['memory'].split()[0]) / 1024 ** 2)} GiB",
        "kernel": machine["kernel"],
        "others": fmt.pct(machine["cpu_others_percent"] / 100, 1),
        "others_second": fmt.pct(second["cpu_others_percent"] / 100, 1),
        "steal": fmt.pct(max(machine["cpu_steal_percent"], second["cpu_steal_percent"]) / 100, 2),
        "load_start": fmt.load(machine["loadavg_start"]),
        "load_end": fmt.load(machine["loadavg_end"]),
        "load_start_second": fmt.load(second["loadavg_start"]),
        "load_end_second": fmt.load(second["loadavg_end"]),
        "started": records.started(first),
        "started_second": records.started(then),
        "commit": f"`{first['commit']}`",
        "minutes": round(first["wall_seconds"] / 60),
        "minutes_second": round(then["wall_seconds"] / 60),
        "warmup": f"{fmt.number(s['warmup_secs'])} s",
        "windows": s["repetitions"],
        "window": f"{fmt.number(s['level_secs'])} s",
        "cold_samples": s["cold_samples"],
        "hash_native": ms2(cell("cpu", "native", 1)["p50_ms"]),
    }


# The executor's cold starts grow with the level by less than this share of Docker's growth.
EXEC_COLD_GROWTH = 0.01


def cold():
    top = max(ev.levels("cold"))
    p50 = {p: {lv: cell("cold", p, lv)["p50_ms"] for lv in ev.levels("cold")}
           for p in ev.platforms()}
    exe = ev.executors()
    docker1, dockertop = p50["docker"][1], p50["docker"][top]
    cut = [1 - p50[p][1] / docker1 for p in exe]
    slope, r2 = ev.linear_fit(p50["docker"])
    require(r2 >= 0.9, "Docker's cold starts grow about linearly with the level")
    exec_fits = [ev.linear_fit(p50[p]) for p in exe]
    require(all(0 < s for s, _ in exec_fits), "the executor's cold starts grow with the level")
    require(max(s for s, _ in exec_fits) / slope < EXEC_COLD_GROWTH,
            "the executor's grow by under 1 % of Docker's growth")
    return {
        "table": ev.cold_table(),
        "one_exec": fmt.span([p50[p][1] for p in exe], ms2),
        "one_docker": duration(docker1),
        "one_change": "−{} to −{} %".format(*(fmt.fixed(100 * f(cut), 1) for f in (min, max))),
        "top": top,
        "top_exec": fmt.span([p50[p][top] for p in exe], ms2),
        "top_docker": duration(dockertop),
        "top_exec_p99": ms2(max(cell("cold", p, top)["p99_ms"] for p in exe)),
        "top_docker_p99": duration(cell("cold", "docker", top)["p99_ms"]),
        "docker_slope": ms2(slope),
        "docker_r2": fmt.fixed(r2, 2),
        "exec_slope": fmt.span([s for s, _ in exec_fits], ms2),
        "slope_ratio": fmt.pct(EXEC_COLD_GROWTH),
        "exec_r2": fmt.span([r for _, r in exec_fits], lambda x: fmt.fixed(x, 2)),
    }


def io():
    levels = ev.levels("io")
    top = max(levels)
    ideal = {lv: lv / (SERVER_MS / 1000) for lv in levels}
    slowest = {lv: min(cell("io", p, lv)["rate"] for p in ev.platforms()) for lv in levels}
    share = {lv: slowest[lv] / ideal[lv] for lv in levels}
    at_ideal = max(lv for lv in levels if all(share[k] >= 0.95 for k in levels if k <= lv))
    require(at_ideal < top, "some platform falls below the ideal at the top level")
    exe = [cell("io", p, top) for p in ev.executors()]
    require(min(c["rate"] for c in exe) / ideal[top] >= 0.97, "the executor stays at the ideal")
    docker, native = cell("io", "docker", top), cell("io", "native", top)
    return {
        "table": ev.io_table(),
        "ideal_until": at_ideal,
        "ideal_share": fmt.pct(min(share[lv] for lv in levels if lv <= at_ideal)),
        "top": top,
        "top_exec": rate_span([c["rate"] for c in exe]),
        "top_exec_p99": fmt.span([c["p99_ms"] for c in exe], ms2),
        "top_docker": fmt.rate(docker["rate"]),
        "top_docker_ci": fmt.rate(docker["rate_ci95"]),
        "top_docker_p50": duration(docker["p50_ms"]),
        "top_docker_p99": duration(docker["p99_ms"]),
        "top_ratio": fmt.span([c["rate"] / docker["rate"] for c in exe], ratio),
        "top_native": fmt.rate(native["rate"]),
        "top_native_ci": fmt.rate(native["rate_ci95"]),
        "top_native_p99": duration(native["p99_ms"]),
    }


def cpu():
    levels, total = ev.levels("cpu"), ev.cpu_totals()
    of_native = {p: total[p] / total["native"] for p in ev.platforms()}
    ci = max(c["rate_ci95"] / c["rate"] for c in ev.cells("cpu"))
    close = [total[p] for p in ev.platforms()]
    require("wamr" in total and max(close) / min(close) - 1 < 0.1,
            "every platform, WAMR's portable artifacts among them, is within a few per cent")
    figures = {f"total_{p}": fmt.number(total[p]) for p in ev.platforms()}
    figures.update({f"of_native_{p}": fmt.pct(of_native[p]) for p in ev.platforms()})
    figures.update({f"of_docker_{p}": fmt.fixed(total[p] / total["docker"], 2)
                    for p in ev.executors()})
    return figures | {
        "table": ev.cpu_table(),
        "levels": f"{min(levels)}…{max(levels)}",
        "per_core": fmt.times(max(levels) / ev.run()["machine"]["logical_cpus"]),
        "ci_max": fmt.pct(ci),
        "close_spread": fmt.pct(max(close) / min(close) - 1),
        "wamr_p50": ms2(cell("cpu", "wamr", 1)["p50_ms"]),
        "native_p50": ms2(cell("cpu", "native", 1)["p50_ms"]),
        "hash_span": fmt.span([cell("cpu", p, 1)["p50_ms"] for p in ev.platforms()], ms2),
    }


def mixed():
    plateau, s = ev.mixed_plateau(), ev.sizes()
    near = [plateau[p] / plateau["native"] for p in ev.platforms() if p != "wamr"]
    # WAMR's portable code is checked against its own section-3 figure below.
    require(all(abs(r - 1) < 0.1 for r in near), "the platforms as fast as native sit near native")
    wamr_mixed = plateau["wamr"] / plateau["native"]
    wamr_cpu = ev.cpu_totals()["wamr"] / ev.cpu_totals()["native"]
    require(abs(wamr_mixed - wamr_cpu) < 0.05, "WAMR loses about as much as in section 3")
    jm = {p: ev.jmeter(p, "mixed") for p in ev.JMETER_PLATFORMS}
    wasmtime_first = (plateau["wasmtime"] > plateau["docker"],
                      jm["wasmtime"]["rate"] > jm["docker"]["rate"],
                      jm["wasmtime"]["p95"] < jm["docker"]["p95"])
    require(all(wasmtime_first), "the JMeter mixed plan shows section 4's order")
    return {
        "table": ev.mixed_table(),
        "interval": f"{fmt.number(s['mixed_interval_secs'])} s",
        "clients": s["mixed_clients"],
        "hold": f"{fmt.number(s['mixed_hold_secs'])} s",
        **{f"vs_docker_{p}": ratio(plateau[p] / plateau["docker"]) for p in ev.platforms()},
        "wamr_of_native": fmt.pct(wamr_mixed),
        "wamr_cpu_of_native": fmt.pct(wamr_cpu),
    }


def realistic():
    s, rel = ev.run(ev.REALISTIC)["sizes"], ev.REALISTIC
    limits = ev.levels("realistic", rel)
    c = {(p, lv): cell("realistic", p, lv, relative=rel) for p in ev.platforms() for lv in limits}
    requests = {x["requests"] for x in c.values()}
    require(len(requests) == 1 and not any(x["errors"] for x in c.values()),
            "every platform got the same arrivals and none failed")
    share = {k: x["cold"] / x["requests"] for k, x in c.items()}
    low, high = min(limits), [lv for lv in limits if lv != min(limits)]
    require(max(share, key=share.get) == ("docker", low), "Docker at limit 1 has most cold starts")
    require(all(share[p, lv] < share[p, low] for p in ev.platforms() for lv in high),
            "higher limits cut the cold starts on every platform")
    fast = ev.executors()
    docker_high = [c["docker", lv]["p99_ms"] for lv in high]
    fast_high = [c[p, lv]["p99_ms"] for p in fast for lv in high]
    ratios = [c["docker", lv]["p99_ms"] / c[p, lv]["p99_ms"] for p in fast for lv in high]
    return {
        "table": ev.realistic_table(),
        "requests": requests.pop(),
        "rate": fmt.rate(s["realistic_rate"]),
        "secs": f"{fmt.number(s['realistic_secs'])} s",
        "idle": f"{fmt.number(s['realistic_idle_secs'])} s",
        "limits": ", ".join(map(str, limits[:-1])) + f" and {limits[-1]}",
        "docker_share_low": fmt.pct(share["docker", low]),
        "docker_p90_low": duration(c["docker", low]["p90_ms"]),
        "docker_p99_low": duration(c["docker", low]["p99_ms"]),
        "docker_mean_low": ratio(c["docker", low]["mean_ms"] / c["wasmtime", low]["mean_ms"]),
        "fast_p99_low": fmt.span([c[p, low]["p99_ms"] for p in fast], ms2),
        "share_high": fmt.span([share[p, lv] for p in ev.platforms() for lv in high], fmt.pct),
        "docker_p99_high": fmt.span(docker_high, duration),
        "docker_vs_fast_high": fmt.span(ratios, ratio),
        "fast_p99_high": fmt.span(fast_high, ms2),
        "native_p99": fmt.span([c["native", lv]["p99_ms"] for lv in limits], ms2),
    }


def access():
    single, multi, both = ev.ACCESS
    exe = ev.executors()
    first = ev.first_call_ms("docker")
    require(first >= cell("access", "docker", scenario=single)["p99_ms"],
            "Docker's first call is its slowest")
    mean = {(p, sc): cell("access", p, scenario=sc)["mean_ms"]
            for p in ev.platforms() for sc in ev.ACCESS}
    return {
        "table": ev.access_table(),
        "docker_first": duration(first),
        "docker_later": ms2(cell("access", "docker", scenario=single)["p50_ms"]),
        "exec_later": fmt.span([cell("access", p, scenario=single)["p50_ms"] for p in exe], ms2),
        "clients": cell("access", "docker", scenario=multi)["level"],
        "multi_exec": fmt.span([mean[p, multi] for p in exe], ms2),
        "multi_docker": duration(mean["docker", multi]),
        "both_docker": ms2(mean["docker", both]),
        "both_exec": fmt.span([mean[p, both] for p in exe], ms2),
    }


def memory():
    exe, kept, builds = ev.executors(), ("lto", "release"), ("lto", "release", "debug")
    row = ev.memory_row
    growth = [ev.growth_mib(row(p, v)) for p in exe for v in kept]
    per = [row(p, v)["per_container_mib"] for p in exe for v in kept]
    ratio = [row(p, v)["per_gib"] / row("docker", v)["per_gib"] for p in exe for v in kept]
    lto_first = {row(p, "lto")["per_container_mib"] < row(p, "release")["per_container_mib"]
                 for p in exe}
    require(len(lto_first) == 2, "the order of the LTO and release builds differs between runtimes")
    debug = {p: row(p, "debug")["per_container_mib"] for p in exe}
    require(all(debug[p] > max(row(p, v)["per_container_mib"] for v in kept) for p in exe),
            "the debug build shows in the growth on every runtime")
    heavy = max(debug, key=debug.get)
    require(10 <= min(ratio) and max(ratio) < 200,
            "the ratio to Docker is tens to a hundred times")
    return {
        "table": ev.memory_table(),
        "containers": ev.sizes()["memory_containers"],
        "docker_per": fmt.span([row("docker", v)["per_container_mib"] for v in builds], fmt.mib),
        "growth": fmt.span(growth, lambda v: fmt.mib(v, 2)),
        "per": fmt.span(per, lambda v: fmt.mib(v, 2)),
        "ratio": fmt.span(ratio, lambda v: fmt.times(v, 2)),
        "debug_heavy": ev.name(heavy),
        "debug_heavy_per": fmt.mib(debug[heavy], 2),
        "debug_others": " and ".join(ev.name(p) for p in exe if p != heavy),
        "debug_others_per": fmt.span([debug[p] for p in exe if p != heavy],
                                     lambda v: fmt.mib(v, 1)),
        "idle_exec": fmt.span([r["idle_mib"] for r in ev.memory_rows() if r["platform"] in exe],
                              lambda v: fmt.mib(v, 2)),
        "idle_docker": fmt.span([row("docker", v)["idle_mib"] for v in builds], fmt.mib),
    }


def threading():
    exe, levels = ev.executors(), ev.levels("threading")
    top, busy = max(levels), [lv for lv in levels if lv > 1]
    r = ev.threading_rate
    workers = ev.run()["machine"]["logical_cpus"]
    capped = [r(p, "blocking-worker", "io", lv) for p in exe for lv in busy]
    require(max(capped) < 1.3 * workers / (SERVER_MS / 1000), "the blocking workers cap I/O")
    cpu = {(p, lv): r(p, "pool", "cpu", lv) / r(p, "blocking-worker", "cpu", lv)
           for p in exe for lv in levels}
    require(all(abs(v - 1) < 0.1 for v in cpu.values()), "CPU-bound work runs alike in every mode")
    asyncs = [p for p in exe if "async" in ev.threading_modes(p)]
    require(asyncs == ["wasmtime"], "only wasmtime has the async mode")
    return {
        "table": ev.threading_table(),
        "windows": ev.sizes()["repetitions"],
        "window": f"{fmt.number(ev.sizes()['threading_secs'])} s",
        "workers": workers,
        "capped": rate_span(capped),
        "busy_from": min(busy),
        "top": top,
        "io_top": fmt.span([r(p, "pool", "io", top) / r(p, "blocking-worker", "io", top)
                            for p in exe], fmt.times),
        "mixed": fmt.span([r(p, "pool", "mixed", lv) / r(p, "blocking-worker", "mixed", lv)
                           for p in exe for lv in busy], fmt.times),
        "cpu_span": fmt.span(cpu.values(), lambda v: fmt.fixed(v, 2)),
        "async_pool": fmt.span([r("wasmtime", "async", w, lv) / r("wasmtime", "pool", w, lv)
                                for w in ("cpu", "io", "mixed") for lv in levels],
                               lambda v: fmt.fixed(v, 2)),
    }


def jmeter():
    j = {(p, plan): ev.jmeter(p, plan) for p in ev.JMETER_PLATFORMS for plan in ev.JMETER_PLANS}
    require(not any(x["errors"] for x in j.values()), "no JMeter request failed")
    cold = {p: j[p, "cold-start"] for p in ev.JMETER_PLATFORMS}
    require(all(c["cold"] == c["samples"] for c in cold.values()),
            "every sample of the cold-start plan was a cold start")
    real = {p: j[p, "realistic"] for p in ev.JMETER_PLATFORMS}
    require(real["wasmtime"]["rate"] > real["docker"]["rate"]
            and real["wasmtime"]["median"] < real["docker"]["median"],
            "the JMeter realistic plan shows the order of section 5")
    runs = [ev.jmeter_provenance(p, plan) for p in ev.JMETER_PLATFORMS for plan in ev.JMETER_PLANS]
    require(len({r["commit"] for r in runs}) == 1, "every plan ran at one commit")
    require(len({r["machine"]["cpu"] for r in runs}) == 1, "every plan ran on one machine")
    machine = runs[0]["machine"]
    return {
        "table": ev.jmeter_table(),
        "date": ev.jmeter_date(),
        "commit": f"`{runs[0]['commit']}`",
        "machine": f"{machine['logical_cpus']} vCPUs ({machine['cpu']})",
        "load": fmt.span([float(r["machine"]["loadavg_start"].split()[0]) for r in runs],
                         lambda x: fmt.fixed(x, 2)),
        "cold_threads": cold["wasmtime"]["threads"],
        "cold_rounds": fmt.number(cold["wasmtime"]["samples"] / cold["wasmtime"]["threads"]),
        "threads": fmt.span([j[k]["threads"] for k in j if k[1] != "cold-start"]),
        **{f"{p}_{plan}_{k}": (fmt.rate(j[p, plan][k]) if k == "rate" else fmt.ms(j[p, plan][k]))
           for p in ev.JMETER_PLATFORMS for plan in ("mixed", "realistic")
           for k in ("rate", "median", "p95")},
    }


def figures():
    parts = {"": conditions(), "cold_": cold(), "io_": io(), "cpu_": cpu(), "mixed_": mixed(),
             "real_": realistic(), "access_": access(), "mem_": memory(), "thr_": threading(),
             "jm_": jmeter()}
    return {prefix + key: value for prefix, part in parts.items() for key, value in part.items()}

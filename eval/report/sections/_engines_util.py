"""Figures of the engines section's I/O, JMeter and sieve subsections, and helpers it shares."""

from report import fmt, records

# How RESULTS.md names the backends in table headers.
DISPLAY = {"wamr": "WAMR"}


def check(holds, claim):
    """Refuses a sentence of the template that the records no longer support."""
    if not holds:
        raise ValueError(f"the prose says {claim}, but the records say otherwise")


def whole_ratio(x):
    """A ratio rounded to a whole number, as eval/engines.py writes its ratio table."""
    return f"{x:.0f}×"


def two_decimals_ratio(x):
    return f"{x:.2f}×"


def ms2(x):
    """Milliseconds to two significant digits: for ranges in prose."""
    return fmt.ms(x, 2)


def ms_table(x):
    """Milliseconds with two decimals, as the benchmarks' summaries write them."""
    return f"{x:.2f} ms"


# --- An I/O-bound action (eval/engines_io.py) --------------------------------------------------

def io_table(record):
    """The table of eval/engines_io.py's summary.md, from results.json."""
    rows = [[platform, figure, f"{f['per_s']:.0f}", f"{f['of_ideal']:.0%}",
             f"{f['median_ms']:.1f} ms", f"{f['p90_ms']:.1f} ms",
             f"{f['cpu_ms_per_activation']:.2f} ms"]
            for platform, figures in record["platforms"].items()
            for figure, f in figures.items()]
    header = ["platform", "figure", "activations/s", "of ideal", "median", "p90",
              "CPU per activation"]
    return fmt.table(header, rows, right=(2, 3, 4, 5, 6))


def io_figures():
    record = records.json_of("engines-io/results.json")
    platforms = record["platforms"]
    executors = [p for p in platforms if p != "docker"]
    top = max(record["concurrency"])
    machine = record["machine"]
    cores = machine["cpus"]

    def row(platform, lang, c=top):
        return platforms[platform][f"{lang}-io-c{c}"]

    # Throughput: the executor's rows all nearer the ideal than Docker's at `top` at once.
    executor_ideal = [f["of_ideal"] for p in executors for f in platforms[p].values()]
    docker_top = [row("docker", lang)["of_ideal"] for lang in record["languages"]]
    check(min(executor_ideal) > max(docker_top),
          "every executor row is nearer the ideal than Docker's runtimes at the top level")

    js = [row(p, "js")["cpu_ms_per_activation"] for p in executors]
    node = row("docker", "js")["cpu_ms_per_activation"]
    check(max(js) < node, "JavaScript costs the executor less CPU than node in Docker")
    py_others = [row(p, "py")["cpu_ms_per_activation"] for p in executors if p != "wasmtime"]
    py_all = [row(p, "py")["cpu_ms_per_activation"] for p in executors]
    cpython = row("docker", "py")["cpu_ms_per_activation"]
    check(min(py_all) > cpython, "Python costs the executor more CPU than the python runtime")
    low_c = min(record["concurrency"])
    check(low_c == 1, "the lowest level is one activation at a time")
    check(all(f"{lang}-io-c{low_c}" in platforms[p]
              and platforms[p][f"{lang}-io-c{low_c}"]["cpu_ms_per_activation"]
              > row(p, lang)["cpu_ms_per_activation"]
              for p in platforms for lang in record["languages"]),
          "one activation at a time costs more CPU than 16 at once, on every platform")
    check(record.get("date_utc") and record.get("commit")
          and not record["commit"].endswith("-dirty"),
          "the run names its date and a clean commit")
    return {
        "io_table": io_table(record),
        "io_date": f"{records.started(record)} UTC",
        "io_commit": f"`{record['commit']}`",
        "io_load_before": fmt.load(machine["load_avg"]),
        "io_load_after": fmt.load(machine["load_avg_after"]),
        "io_seconds": f"{fmt.number(record['seconds'])} s",
        "io_delay": f"{record['delay_ms']} ms",
        "io_top": str(top),
        "io_cores": str(cores),
        "io_of_ideal_executor": fmt.span(executor_ideal, fmt.pct),
        "io_of_ideal_docker_top": fmt.span(docker_top, fmt.pct),
        "io_js_cpu": fmt.span(js, ms2),
        "io_js_cpu_node": ms2(node),
        "io_js_node_over": fmt.span([node / x for x in js], lambda x: fmt.times(x, 2)),
        "io_py_cpu_wasmtime": ms2(row("wasmtime", "py")["cpu_ms_per_activation"]),
        "io_py_cpu_others": fmt.span(py_others, ms2),
        "io_py_over_cpython": fmt.span([x / cpython for x in py_all],
                                       lambda x: fmt.times(x, 2)),
        "io_py_cpu_cpython": fmt.ms(cpython),
        "io_js_cpu_wasmtime_low": fmt.ms(row("wasmtime", "js", low_c)["cpu_ms_per_activation"]),
        "io_js_cpu_wasmtime_top": ms2(row("wasmtime", "js")["cpu_ms_per_activation"]),
    }


# --- Through real OpenWhisk: JMeter (eval/openwhisk/run.sh) ------------------------------------

JMETER_ROWS = {
    "cold": [("response p50", "response_ms", "p50"), ("response p95", "response_ms", "p95"),
             ("waitTime + initTime p50", "wait_init_ms", "p50")],
    "warm": [("response p50", "response_ms", "p50"), ("response p95", "response_ms", "p95"),
             ("throughput", "throughput_rps", None)],
}


def owtool_value(v, unit):
    """A value as eval/openwhisk/owtool.py writes it in summary.md."""
    if isinstance(v, float) and not v.is_integer():
        return "%.1f%s" % (v, unit)
    return "%d%s" % (int(v), unit)


def jmeter_row(action, level, entry, label, key, stat):
    wasm, docker = entry["wasm"], entry["docker"]
    if stat is None:
        a, b, unit, ratio = wasm[key], docker[key], " /s", wasm[key] / docker[key]
    else:
        a, b, unit = wasm[key][stat], docker[key][stat], " ms"
        ratio = b / a
    return [action, f"`{level}`", label, owtool_value(a, unit), owtool_value(b, unit),
            two_decimals_ratio(ratio)]


def jmeter_table(summaries):
    rows = [jmeter_row(action, level, entry, *spec)
            for action, summary in summaries.items()
            for level, entry in summary["levels"].items()
            for spec in JMETER_ROWS[entry["focus"]]]
    header = ["action", "level", "figure", "wasm", "docker", "docker/wasm"]
    return fmt.table(header, rows, right=(3, 4, 5))


def jmeter_figures():
    summaries = {a: records.json_of(f"openwhisk-{a}/summary.json")
                 for a in ("hello-js", "hello-py")}
    js, py = (summaries[a]["levels"] for a in ("hello-js", "hello-py"))
    meta_js, meta_py = (summaries[a]["meta"] for a in ("hello-js", "hello-py"))
    commits = {meta_js["openwhisk_commit"], meta_py["openwhisk_commit"]}
    check(len(commits) == 1, "both actions ran on the same OpenWhisk build")
    concurrent = "cold-16"
    cores = meta_py["cpus"]

    def p50(levels, level, side, key="response_ms"):
        return levels[level][side][key]["p50"]

    js_init = p50(js, "cold-1", "wasm", "init_ms")
    check(js_init < p50(js, "cold-1", "wasm") / 2,
          "most of the wasm side of a JavaScript cold start is OpenWhisk's own path")
    return {
        "jm_table": jmeter_table(summaries),
        "jm_commit": commits.pop()[:8],
        "jm_date_js": meta_js["date"],
        "jm_date_py": meta_py["date"],
        "jm_load_js": f"{fmt.load(meta_js['load_before'])} → {fmt.load(meta_js['load_after'])}",
        "jm_load_py": f"{fmt.load(meta_py['load_before'])} → {fmt.load(meta_py['load_after'])}",
        "jm_cores": str(cores),
        "jm_js_cold1_wasm": fmt.ms(p50(js, "cold-1", "wasm")),
        "jm_js_cold1_docker": fmt.ms(p50(js, "cold-1", "docker")),
        "jm_py_cold1_wasm": fmt.ms(p50(py, "cold-1", "wasm")),
        "jm_py_cold1_docker": fmt.ms(p50(py, "cold-1", "docker")),
        "jm_js_init": fmt.ms(js_init),
        "jm_concurrent": concurrent.split("-")[1],
        "jm_js_c16_wasm": fmt.ms(p50(js, concurrent, "wasm")),
        "jm_js_c16_docker": fmt.ms(p50(js, concurrent, "docker")),
        "jm_js_c16_ratio": fmt.times(p50(js, concurrent, "docker") / p50(js, concurrent, "wasm")),
        "jm_py_c16_wasm": fmt.ms(p50(py, concurrent, "wasm")),
        "jm_py_c16_docker": fmt.ms(p50(py, concurrent, "docker")),
        "jm_py_c16_ratio": fmt.times(p50(py, concurrent, "docker") / p50(py, concurrent, "wasm")),
        "jm_py_c16_creates": str(py[concurrent]["wasm"]["creates"]),
        "jm_py_cold1_init": fmt.ms(p50(py, "cold-1", "wasm", "init_ms")),
        "jm_py_c16_init": fmt.ms(p50(py, concurrent, "wasm", "init_ms")),
    }


# --- The prime sieve (eval/sieve.py) ------------------------------------------------------------

def sieve_tables(record):
    """The two tables of eval/sieve.py's summary.md, from results.json."""
    backends = record["backends"]
    rows = [[backend, name, ms_table(s["median_ms"]), ms_table(s["p10_ms"]),
             ms_table(s["p90_ms"])]
            for backend, figures in backends.items() for name, s in figures.items()]
    times = fmt.table(["backend", "action", "median", "p10", "p90"], rows, right=(2, 3, 4))
    node = next(figures["js-node"] for figures in backends.values() if "js-node" in figures)

    def over(figures, a, b):
        return f"{figures[a]['median_ms'] / b['median_ms']:.2f}"

    ratios = fmt.table(
        ["backend", "JS engine in Wasm / node's JIT", "AssemblyScript / node's JIT",
         "AssemblyScript / Rust"],
        [[backend, over(f, "js-engine", node), over(f, "assemblyscript", node),
          over(f, "assemblyscript", f["rust"])] for backend, f in backends.items()],
        right=(1, 2, 3))
    return times, ratios, node


def sieve_figures():
    record = records.json_of("sieve/results.json")
    backends = record["backends"]
    times, ratios, node = sieve_tables(record)

    def over_node(backend, action):
        return backends[backend][action]["median_ms"] / node["median_ms"]

    engine = {b: over_node(b, "js-engine") for b in backends}
    check(min(engine.values()) > 1, "the engine in Wasm is slower than node's JIT everywhere")
    machine = record["machine"]
    return {
        "sieve_times": times,
        "sieve_ratios": ratios,
        "sieve_limit": f"{record['limit']:,}",
        "sieve_rounds": str(record["rounds"]),
        "sieve_load_before": fmt.load(machine["load_avg"]),
        "sieve_load_after": fmt.load(machine["load_avg_after"]),
        "sieve_engine": fmt.span(list(engine.values()), fmt.times),
        "sieve_as_node": fmt.span([over_node(b, "assemblyscript") for b in backends],
                                  two_decimals_ratio),
        "sieve_as_rust": fmt.span([f["assemblyscript"]["median_ms"] / f["rust"]["median_ms"]
                                   for f in backends.values()], two_decimals_ratio),
    }

"""Figures of the footprint section: memory at 1,000 warm containers and the edge footprint."""

from report import fmt, records
from report.sections import _footprint_util as util

SAME_PRECOMPILED, SAME_PORTABLE, DISTINCT = "precompiled", "portable", "portable, distinct actions"
PATHS = (SAME_PRECOMPILED, SAME_PORTABLE, DISTINCT)
ISSUE_14_TARGET_KIB = 32  # the template's {{=32 KiB}}: issue 14's goal per container of one action
EXAMPLE_CONTAINERS = 100  # the budget paragraph's example: 100 warm containers of distinct actions


def docker_memory():
    """The Docker action container of the evaluation's memory experiment (release + LTO)."""
    memory = records.json_of("evaluation/summary.json")["memory"]
    docker = [m for m in memory if m["platform"] == "docker"]
    lto = next(m for m in docker if m["variant"] == "lto")
    return lto, [m["idle_mib"] for m in docker]


def thousand_records():
    return {build: util.summary(f"footprint-1000/{build}") for build in util.BUILDS}


def thousand_table(by_build, docker_kib):
    rows = []
    for build, record in by_build.items():
        results = [util.row(record, build, code) for code in PATHS]
        precompiled, portable, distinct = results
        idle = fmt.span([r["idle"]["total_kib"] / 1024 for r in results], util.mib1)
        distinct_text = f"**{util.per_container(distinct)}**"
        if util.containers_of(record, distinct) != util.containers_of(record, precompiled):
            distinct_text += f" ({fmt.number(util.containers_of(record, distinct))})"
        interpreted = " (interpreted)" if build == "wamr" else ""
        rows.append([util.BUILD_NAMES[build], idle, f"**{util.per_container(precompiled)}**",
                     util.per_container(portable) + interpreted, distinct_text + interpreted,
                     fmt.times(docker_kib / distinct["per_warm_container_kib"])])
    header = ["build", "idle RSS (range over the three paths)",
              "same action, precompiled (RSS / PSS per container)",
              "same action, portable", "distinct actions, portable",
              "a Docker action container over a distinct action's"]
    return fmt.table(header, rows, right=(1, 2, 3, 4, 5))


def check_pss_equals_rss(by_build):
    for build, record in by_build.items():
        for result in record["results"]:
            rss, pss = result["per_warm_container_kib"], result["per_warm_container_pss_kib"]
            if abs(pss - rss) > 0.02 * rss + 0.1:
                raise ValueError(f"the prose says PSS equals RSS, but {build} {result['code']} "
                                 f"has {rss} KiB RSS and {pss} KiB PSS per container")


def same_action_figures(by_build):
    same = [(record, util.row(record, build, code)) for build, record in by_build.items()
            for code in (SAME_PRECOMPILED, SAME_PORTABLE)]
    per = [r["per_warm_container_kib"] for _, r in same]
    if max(per) >= ISSUE_14_TARGET_KIB:
        raise ValueError(f"the prose says containers of one action stay inside issue 14's "
                         f"{ISSUE_14_TARGET_KIB} KiB, the records have {max(per)} KiB")
    return {
        "same_kib": fmt.span(per, lambda kib: fmt.kib(kib, 2)),
        "same_thousand": fmt.span(
            [r["per_warm_container_kib"] * util.containers_of(record, r) / 1024
             for record, r in same], lambda mib: fmt.mib(mib, 2)),
    }


def distinct_figures(by_build, docker):
    distinct = {build: util.row(record, build, DISTINCT) for build, record in by_build.items()}
    kib = {build: r["per_warm_container_kib"] for build, r in distinct.items()}
    if not kib["wasmer"] > kib["wamr"] > kib["wasmtime"]:
        raise ValueError(f"the prose orders a distinct action's container as wasmer (LLVM) > "
                         f"WAMR > wasmtime (Cranelift); the records say {kib}")
    figures = {f"distinct_{build}": util.mib_of_kib(k) for build, k in kib.items()}
    figures.update({f"per_gib_{build}": util.about(1024 * 1024 / k) for build, k in kib.items()})
    figures["per_gib_docker"] = util.about(docker["per_gib"])
    wasmer = distinct["wasmer"]
    wasmer_containers = util.containers_of(by_build["wasmer"], wasmer)
    figures["wasmer_distinct_containers"] = fmt.number(wasmer_containers)
    figures["wasmer_init_p50"] = f"{fmt.number(wasmer['init']['p50_us'] / 1e6)} s"
    return figures, distinct


def thousand_figures(docker):
    by_build = thousand_records()
    config = by_build["wasmtime"]
    check_pss_equals_rss(by_build)
    distinct, distinct_rows = distinct_figures(by_build, docker)
    figures = {
        "thousand_containers": fmt.number(config["containers"]),
        "thousand_runs": fmt.number(config["requests"]),
        "thousand_table": thousand_table(by_build, docker["per_container_mib"] * 1024),
        "thousand_load": util.load_averages(by_build),
        "docker_container": fmt.mib(docker["per_container_mib"]),
        "docker_containers": fmt.number(docker["containers"]),
        **same_action_figures(by_build),
        **distinct,
    }
    return figures, distinct_rows["wamr"]


def edge_memory_table(record):
    rows = []
    for build in util.BUILDS:
        precompiled, portable = (util.row(record, build, code) for code in PATHS[:2])
        idle = fmt.span([r["idle"]["total_kib"] / 1024 for r in (precompiled, portable)], util.mib1)
        interpreted = " (interpreted)" if build == "wamr" else ""
        rows.append([util.BUILD_NAMES[build], idle, util.per_container(precompiled, pss=False),
                     util.per_container(portable, pss=False) + interpreted])
    header = ["build", "idle RSS (range over the two paths)", "per warm container, precompiled",
              "per warm container, portable"]
    return fmt.table(header, rows, right=(1, 2, 3))


def wasmer_idle_figures(record, sizes):
    rows = [util.row(record, "wasmer", code) for code in (SAME_PRECOMPILED, SAME_PORTABLE)]
    for r in rows:
        if r["idle"]["file_kib"] < 0.8 * r["idle"]["total_kib"]:
            raise ValueError(f"the prose says wasmer's idle RSS is mostly file-backed pages, the "
                             f"records say {r['idle']}")
    return {
        "wasmer_idle_file": fmt.span([r["idle"]["file_kib"] / 1024 for r in rows], util.mib1),
        "wasmer_idle_anon": fmt.span([r["idle"]["anon_kib"] / 1024 for r in rows], util.mib1),
        "wasmer_binary": f"{fmt.fixed(sizes[('x86_64-unknown-linux-gnu', 'wasmer')], 1)} MB",
    }


def budget_figures(wamr_distinct, docker, docker_idle):
    util.board_config_checked()
    idle_mib = wamr_distinct["idle"]["total_kib"] / 1024
    per_mib = wamr_distinct["per_warm_container_kib"] / 1024
    executor_mib = idle_mib + EXAMPLE_CONTAINERS * per_mib
    if min(docker_idle) <= executor_mib:
        raise ValueError(f"the prose says the idle Docker engine alone takes more than the "
                         f"executor with {EXAMPLE_CONTAINERS} containers ({executor_mib:.1f} MiB); "
                         f"the records say {docker_idle}")
    docker_example = EXAMPLE_CONTAINERS * docker["per_container_mib"]
    if docker_example <= 1024:
        raise ValueError(f"the prose says {EXAMPLE_CONTAINERS} Docker action containers exceed a "
                         f"1 GB board, the records give {docker_example:.0f} MiB")
    return {
        "wamr_idle": util.mib1(idle_mib),
        "wamr_distinct": fmt.mib(per_mib, 2),
        "wamr_example": fmt.mib(executor_mib, 2),
        "executor_left": fmt.mib(util.EXECUTOR_MEMORY_MAX_MIB - executor_mib),
        "docker_engine_idle": fmt.span(docker_idle, lambda mib: fmt.mib(mib, 3)),
        "docker_example": fmt.mib(docker_example),
    }


def edge_figures(wamr_distinct, docker, docker_idle):
    record = util.summary("edge-footprint")
    sizes = util.binary_sizes()
    util.check_binaries_prose(sizes)
    return {
        "binaries_table": util.binaries_table(sizes),
        "edge_containers": fmt.number(record["containers"]),
        "edge_runs": fmt.number(record["requests"]),
        "edge_table": edge_memory_table(record),
        "edge_load": f"{fmt.load(record['loadavg_start'])} → {fmt.load(record['loadavg_end'])}",
        **wasmer_idle_figures(record, sizes),
        **budget_figures(wamr_distinct, docker, docker_idle),
    }


def figures():
    docker, docker_idle = docker_memory()
    thousand, wamr_distinct = thousand_figures(docker)
    return {**thousand, **edge_figures(wamr_distinct, docker, docker_idle)}

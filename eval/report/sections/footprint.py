"""Figures of the footprint section: memory at 1,000 warm containers and the edge footprint."""

from report import fmt, records
from report.sections import _footprint_util as util

SAME_PRECOMPILED, SAME_PORTABLE, DISTINCT = "precompiled", "portable", "portable, distinct actions"
PATHS = (SAME_PRECOMPILED, SAME_PORTABLE, DISTINCT)
ISSUE_14_TARGET_KIB = 32  # the template's {{=32 KiB}}: issue 14's goal per container of one action
EXAMPLE_CONTAINERS = 100  # the budget paragraph's example: 100 warm containers of distinct actions


DOCKER_RUNS = "memory-docker/run-*/summary.json"


def docker_memory():
    """The Docker action container (release + LTO) of the memory experiment's repeated runs on
    Docker alone: its runs, its mean memory per warm container with the runs' own figures, and
    the idle engine's memory of every run and variant."""
    runs = records.repeated(DOCKER_RUNS)
    rows = [m for run in runs for m in records.json_of(run)["memory"] if m["platform"] == "docker"]
    lto = [m for m in rows if m["variant"] == "lto"]
    if len(lto) != len(runs) or len({m["containers"] for m in lto}) != 1:
        raise ValueError(f"{DOCKER_RUNS}: one release + LTO row of one size per run expected")
    per_container = [m["per_container_mib"] for m in lto]
    return {
        "runs": runs,
        "containers": lto[0]["containers"],
        "per_container_runs": per_container,
        "per_container_mib": fmt.mean(per_container),
    }, [m["idle_mib"] for m in rows]


RUNS = "footprint-1000/run-*/summary.json"


def thousand_runs():
    """The repeated runs' paths and their footprint records (every build in each)."""
    runs = records.repeated(RUNS)
    return runs, [records.json_of(run)["footprint"] for run in runs]


def across_runs(footprints, build, code):
    """One build's code path in every run: the rows, and each figure the text needs as the
    list of the runs' values."""
    rows = [util.row(footprint, build, code) for footprint in footprints]
    containers = {util.containers_of(f, r) for f, r in zip(footprints, rows)}
    if len(containers) != 1:
        raise ValueError(f"{build} {code}: the runs measured different numbers of containers")
    return {
        "containers": containers.pop(),
        "rss": [r["per_warm_container_kib"] for r in rows],
        "pss": [r["per_warm_container_pss_kib"] for r in rows],
        "idle_kib": [r["idle"]["total_kib"] for r in rows],
        "init_p50_us": [r["init"]["p50_us"] for r in rows],
    }


def per_container_across(path):
    """'3.80 KiB [3.61–3.99 KiB] / 3.79 KiB': RSS per warm container, mean and interval across
    the runs, and the mean PSS."""
    return (f"{fmt.mean_and_interval(path['rss'], kib2)} / "
            f"{kib2(fmt.mean(path['pss']))}")


def kib2(kib):
    return f"{fmt.number(kib, 2)} KiB"


def thousand_table(paths, docker_kib):
    rows = []
    for build in util.BUILDS:
        precompiled, portable, distinct = (paths[build, code] for code in PATHS)
        idle = fmt.span([kib / 1024 for code in PATHS for kib in paths[build, code]["idle_kib"]],
                        util.mib1)
        interpreted = " (interpreted)" if build == "wamr" else ""
        rows.append([util.BUILD_NAMES[build], idle, f"**{per_container_across(precompiled)}**",
                     per_container_across(portable) + interpreted,
                     f"**{per_container_across(distinct)}**{interpreted}",
                     fmt.times(docker_kib / fmt.mean(distinct["rss"]))])
    header = ["build", "idle RSS (range over the paths and runs)",
              "same action, precompiled (RSS mean [interval] / PSS per container)",
              "same action, portable", "distinct actions, portable",
              "a Docker action container over a distinct action's"]
    return fmt.table(header, rows, right=(1, 2, 3, 4, 5))


def check_pss_equals_rss(paths):
    for (build, code), path in paths.items():
        for rss, pss in zip(path["rss"], path["pss"]):
            if abs(pss - rss) > 0.02 * rss + 0.1:
                raise ValueError(f"the prose says PSS equals RSS, but {build} {code} has "
                                 f"{rss} KiB RSS and {pss} KiB PSS per container in a run")


def same_action_figures(paths):
    same = [path for (_, code), path in paths.items() if code != DISTINCT]
    highest = max(kib for path in same for kib in path["rss"])
    if highest >= ISSUE_14_TARGET_KIB:
        raise ValueError(f"the prose says containers of one action stay inside issue 14's "
                         f"{ISSUE_14_TARGET_KIB} KiB, a run has {highest} KiB")
    means = [fmt.mean(path["rss"]) for path in same]
    return {
        "same_kib": fmt.span(means, lambda kib: fmt.kib(kib, 2)),
        "same_thousand": fmt.span(
            [fmt.mean(path["rss"]) * path["containers"] / 1024 for path in same],
            lambda mib: fmt.mib(mib, 2)),
    }


def distinct_figures(paths, docker):
    kib = {build: fmt.mean(paths[build, DISTINCT]["rss"]) for build in util.BUILDS}
    if max(kib, key=kib.get) != "wasmer":
        raise ValueError(f"the prose says a distinct action's container costs most on wasmer "
                         f"(LLVM's code); the records' means say {kib}")
    containers = {paths[build, DISTINCT]["containers"] for build in util.BUILDS}
    if len(containers) != 1:
        raise ValueError(f"the prose gives one size of the distinct-actions path: {containers}")
    figures = {f"distinct_{build}": util.mib_of_kib(k) for build, k in kib.items()}
    figures.update({f"per_gib_{build}": util.about(1024 * 1024 / k) for build, k in kib.items()})
    figures["per_gib_docker"] = util.about(1024 / docker["per_container_mib"])
    figures["distinct_range"] = fmt.span([k / 1024 for k in kib.values()], lambda mib: fmt.mib(mib, 2))
    figures["distinct_containers"] = fmt.number(containers.pop())
    wasmer_init_s = fmt.mean(paths["wasmer", DISTINCT]["init_p50_us"]) / 1e6
    figures["wasmer_init_p50"] = f"{fmt.number(wasmer_init_s)} s"
    return figures


def thousand_figures(docker):
    runs, footprints = thousand_runs()
    config = footprints[0]
    sizes = {(f["containers"], f["requests"], f["new_inits"], f["distinct_containers"])
             for f in footprints}
    if len(sizes) != 1:
        raise ValueError(f"{RUNS}: the runs have different sizes: {sizes}")
    paths = {(build, code): across_runs(footprints, build, code)
             for build in util.BUILDS for code in PATHS}
    check_pss_equals_rss(paths)
    wamr = paths["wamr", DISTINCT]
    wamr_distinct = {"idle_kib": fmt.mean(wamr["idle_kib"]), "kib": fmt.mean(wamr["rss"])}
    figures = {
        "thousand_runs_count": str(len(runs)),
        "thousand_containers": fmt.number(config["containers"]),
        "thousand_runs": fmt.number(config["requests"]),
        "thousand_table": thousand_table(paths, docker["per_container_mib"] * 1024),
        "thousand_conditions": records.conditions_table(
            [(str(i), run) for i, run in enumerate(runs, 1)]),
        "docker_container": fmt.mib(docker["per_container_mib"]),
        "docker_container_interval": fmt.mean_and_interval(docker["per_container_runs"], fmt.mib),
        "docker_containers": fmt.number(docker["containers"]),
        "docker_runs_count": str(len(docker["runs"])),
        "docker_conditions": records.conditions_table(
            [(str(i), run) for i, run in enumerate(docker["runs"], 1)]),
        **same_action_figures(paths),
        **distinct_figures(paths, docker),
    }
    return figures, wamr_distinct


def edge_memory_table(record):
    rows = []
    for build in util.BUILDS:
        precompiled, portable = (util.row(record, build, code) for code in PATHS[:2])
        idle = fmt.span([r["idle"]["total_kib"] / 1024 for r in (precompiled, portable)], util.mib1)
        interpreted = " (interpreted)" if build == "wamr" else ""
        rows.append([util.BUILD_NAMES[build], idle, util.per_container(precompiled),
                     util.per_container(portable) + interpreted])
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
    idle_mib = wamr_distinct["idle_kib"] / 1024
    per_mib = wamr_distinct["kib"] / 1024
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
        "edge_date": record["date_utc"][:10],
        "edge_commit": f"`{record['commit']}`",
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

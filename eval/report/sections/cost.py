"""RESULTS.md's platform cost: host CPU per warm activation and per I/O activation, run ten
times on one build, where the executor's share of it goes (perf profiles), and the changes the
profiles led to (before and after, interleaved in one session)."""

from report import fmt, records
from report.sections import _evaluation_util as ev

RUNS = "platform-cost/run-*"
PROFILE = "platform-cost/profile-wasmtime/breakdown.json"
# The builds that run guests on the blocking pool, profiled the same way.
POOL_PROFILES = ("wasmer", "wamr")
CUT = "platform-cost/cut"
# The cost runs of an earlier day, on another machine of the same kind.
EARLIER = "platform-cost/2026-12-06"
DOCKER = "docker"
CONNECTIONS = {"new": "new connection", "kept-alive": "kept alive", None: "a process each"}
# Within this, memory per warm container counts as unchanged (the footprint's run-to-run noise).
UNCHANGED_KIB = 16
# Issue 14's target: the executor's CPU per warm activation at most this share of Docker's.
COST_TARGET = 0.1


def _cost(run):
    """{(platform, connection): row} of one run."""
    return {(r["platform"], r["connection"]): r
            for r in records.json_of(f"{run}/cost/summary.json")["cost"]}



def _series(runs, figure):
    return [figure(run) for run in runs]


def _cost_table(runs, keys):
    rows = []
    for platform, connection in keys:
        cpu = _series(runs, lambda r: _cost(r)[(platform, connection)]["cpu_us"])
        inside = _series(runs, lambda r: _cost(r)[(platform, connection)]["executor_us"])
        rows.append([ev.name(platform), CONNECTIONS[connection], *(fmt.us(v) for v in cpu),
                     fmt.mean_and_interval(cpu, fmt.us),
                     "–" if None in inside else fmt.us(fmt.mean(inside))])
    header = ["platform", "connection", *(f"run {i}" for i in range(1, len(runs) + 1)),
              "mean [95 % interval across runs]", "inside the executor (/run, mean)"]
    return fmt.table(header, rows, right=tuple(range(2, len(runs) + 4)))


def _ratio(runs, platform, connection, docker_connection):
    return _series(runs, lambda r: _cost(r)[(platform, connection)]["cpu_us"]
                   / _cost(r)[(DOCKER, docker_connection)]["cpu_us"])


def _ratio_figures(runs):
    figures, rows = {}, []
    for p in ev.EXECUTORS:
        as_called = _ratio(runs, p, "kept-alive", "new")
        same_new = _ratio(runs, p, "new", "new")
        same_kept = _ratio(runs, p, "kept-alive", "kept-alive")
        rows.append([ev.name(p), *(fmt.mean_and_interval(v, lambda x: fmt.fixed(x, 3))
                                 for v in (as_called, same_new, same_kept))])
        figures[f"as_called_{p}"] = fmt.fixed(fmt.mean(as_called), 2)
        figures[f"same_new_{p}"] = fmt.fixed(fmt.mean(same_new), 2)
    figures["ratio_table"] = fmt.table(
        ["executor build", "kept alive, of Docker's new connection (as OpenWhisk calls each)",
         "new connection, of Docker's new connection (the same client)",
         "kept alive, of Docker's kept alive"], rows)
    as_called = {p: fmt.across(_ratio(runs, p, "kept-alive", "new")) for p in ev.EXECUTORS}
    same_new = {p: fmt.across(_ratio(runs, p, "new", "new")) for p in ev.EXECUTORS}
    figures["as_called_span"] = fmt.span([m for m, _ in as_called.values()],
                                         lambda x: fmt.fixed(x, 2))
    figures["same_new_span"] = fmt.span([m for m, _ in same_new.values()],
                                        lambda x: fmt.fixed(x, 2))
    figures["as_called_met"] = _verdict({p: m + h for p, (m, h) in as_called.items()})
    figures["same_new_met"] = _verdict({p: m + h for p, (m, h) in same_new.items()})
    figures["cost_target"] = f"{COST_TARGET:g}"
    return figures


def _earlier_day_figures(runs):
    """The same cost runs of an earlier day on another machine of the same kind, for the ratio's
    movement between machines (wasmtime's warm path is the same code): `EARLIER/run-*`."""
    earlier = records.repeated(f"{EARLIER}/run-*", parts=("cost/summary.json",))
    first = records.json_of(f"{earlier[0]}/cost/summary.json")
    as_called = {p: fmt.mean(_ratio(earlier, p, "kept-alive", "new")) for p in ev.EXECUTORS}
    now = {p: fmt.mean(_ratio(runs, p, "kept-alive", "new")) for p in ev.EXECUTORS}
    docker = {name: fmt.mean(_series(rs, lambda r: _cost(r)[(DOCKER, "new")]["cpu_us"]))
              for name, rs in (("earlier", earlier), ("now", runs))}
    if now["wasmtime"] <= as_called["wasmtime"] or docker["now"] <= docker["earlier"]:
        raise ValueError("the prose says wasmtime's ratio and Docker's cost were lower on the "
                         "earlier day")
    return {
        "earlier_date": records.days([records.json_of(f"{r}/cost/summary.json")
                                      for r in earlier]),
        "earlier_commit": f"`{first['commit']}`",
        "earlier_as_called_wasmtime": fmt.fixed(as_called["wasmtime"], 2),
        "now_as_called_wasmtime": fmt.fixed(now["wasmtime"], 2),
        "earlier_as_called_pool_span": fmt.span([as_called[p] for p in POOL_PROFILES],
                                                lambda x: fmt.fixed(x, 2)),
        "earlier_docker_us": fmt.us(docker["earlier"]),
        "now_docker_us": fmt.us(docker["now"]),
    }


def _verdict(highs):
    """Which builds meet the target even at the top of their interval."""
    met = [ev.name(p) for p, high in highs.items() if high <= COST_TARGET]
    if len(met) == len(highs):
        return "met by every build"
    if not met:
        return "met by none of the builds"
    return "met by " + " and ".join(met) + " only"


# ------------------------------------------------------------------------------ I/O activations
def _io(run):
    return _io_record(f"{run}/io/summary.json")


def _io_record(path):
    record = records.json_of(path)
    cells = {(c["platform"], c["level"]): c for c in record["summary"]["cells"]["io"]
             if c["scenario"] == "io"}
    return record, cells


IO_DELAY_S = 0.3


def _io_cpu(io, platform, level):
    """The platform's CPU per I/O activation at one level of an (`_io_record`) I/O run."""
    record, _ = io
    return next(row["platform_cpu_us"] for row in record["io_cpu"]
                if row["platform"] == platform and row["level"] == level)


def _io_ideal(io, platform, level):
    """The rate at one level as a share of the ideal, clients ÷ the server's delay."""
    _, cells = io
    return cells[(platform, level)]["rate"] / (level / IO_DELAY_S)


def _io_figures(runs):
    first, _ = _io(runs[0])
    levels = sorted({row["level"] for row in first["io_cpu"]})
    rows, figures = [], {}
    for p in first["platforms"]:
        for level in levels:
            cpu = _series(runs, lambda r: _io_cpu(_io(r), p, level))
            ideal = _series(runs, lambda r: _io_ideal(_io(r), p, level))
            rows.append([ev.name(p), f"{level:,}", *(fmt.us(v) for v in cpu),
                         fmt.mean_and_interval(cpu, fmt.us), fmt.mean_and_interval(ideal, fmt.pct)])
            figures[f"io_cpu_{p}_{level}"] = fmt.us(fmt.mean(cpu))
            figures[f"io_ideal_{p}_{level}"] = fmt.pct(fmt.mean(ideal))
    header = ["platform", "clients", *(f"run {i}: CPU" for i in range(1, len(runs) + 1)),
              "CPU per I/O activation, mean [95 % interval]", "rate, of the ideal (mean)"]
    figures["io_table"] = fmt.table(header, rows, right=tuple(range(1, len(runs) + 4)))
    figures["io_levels"] = " and ".join(f"{level:,}" for level in levels)
    figures["io_top"] = f"{levels[-1]:,}"
    return figures


# ------------------------------------------------------------------------------------- profile
HTTP_PART = "HTTP server (hyper, axum, tower)"
# Below this share of the samples, no part of the warm path "dominates" it.
DOMINANT = 0.25

def _share(stretch, part):
    """The share of `stretch`'s samples that went to `part`."""
    n = next((p["samples"] for p in stretch["parts"] if p["part"] == part), 0)
    return n / stretch["samples"]


def _cost_stretch(profile, connection):
    return next(s for s in profile["stretches"]
                if s["experiment"] == "cost" and s.get("connection") == connection)


# The parts of the warm path that make and end an instance: its memory among them.
LIFECYCLE = ("instantiation", "instance teardown")
WAITING = "waiting and waking threads"
SOCKET = "socket reads and writes (kernel)"
OUTBOUND = "the guest's outbound HTTP call (host side)"


def _pool_profile_figures(runs):
    """The wasmer and WAMR builds' profiles: each part's share of a warm activation's samples,
    times the mean CPU per activation of the repeated runs, kept alive and on new connections."""
    def mean_cpu(platform, connection):
        return fmt.mean(_series(runs, lambda r: _cost(r)[(platform, connection)]["cpu_us"]))

    profiles = {p: records.json_of(f"platform-cost/profile-{p}/breakdown.json")
                for p in POOL_PROFILES}
    columns = [(p, c, _cost_stretch(profiles[p], c), mean_cpu(p, c))
               for p in POOL_PROFILES for c in ("kept-alive", "new")]
    parts = []
    for _, _, stretch, _ in columns:
        for part in stretch["parts"]:
            if part["part"] not in parts:
                parts.append(part["part"])
    rows = [[part, *(f"{fmt.pct(_share(st, part), 1)} · {fmt.us(_share(st, part) * mean, 2)}"
                     for _, _, st, mean in columns)] for part in parts]
    rows.append(["**all** (samples)", *(f"{fmt.pct(1)} · {fmt.us(mean, 3)} ({st['samples']:,})"
                                        for _, _, st, mean in columns)])
    header = ["part of the warm path",
              *(f"{ev.name(p)}, {CONNECTIONS[c]}" for p, c, _, _ in columns)]

    # Kept alive: each build's share of a part, and that share of its mean CPU per activation.
    kept = {p: (st, mean) for p, c, st, mean in columns if c == "kept-alive"}
    kept["wasmtime"] = (_cost_stretch(records.json_of(PROFILE), "kept-alive"),
                        mean_cpu("wasmtime", "kept-alive"))
    lifecycle = {p: sum(_share(st, part) for part in LIFECYCLE) for p, (st, _) in kept.items()}
    lifecycle_us = {p: lifecycle[p] * mean for p, (_, mean) in kept.items()}
    waiting = {p: _share(st, WAITING) * mean for p, (st, mean) in kept.items()}
    socket = {p: _share(st, SOCKET) * mean for p, (st, mean) in kept.items()}
    for p in POOL_PROFILES:
        stretch = kept[p][0]
        largest = max(stretch["parts"], key=lambda part: part["samples"])
        if largest["part"] != SOCKET or largest["samples"] / stretch["samples"] > DOMINANT:
            raise ValueError(f"the prose says the kernel's socket work is the largest part of "
                             f"{p}'s kept-alive warm path and none dominates; {largest} is")
        if lifecycle_us[p] <= lifecycle_us["wasmtime"]:
            raise ValueError("the prose says the pool builds spend more on the instance's life "
                             "than wasmtime does")
        if waiting[p] >= waiting["wasmtime"]:
            raise ValueError("the prose says the pool builds spend less on waiting and waking "
                             "than wasmtime")
    wasmtime_largest = max(kept["wasmtime"][0]["parts"], key=lambda part: part["samples"])
    if wasmtime_largest["part"] != WAITING:
        raise ValueError("the prose says waking threads is the wasmtime build's largest part")
    def pool(figure):
        return [figure[p] for p in POOL_PROFILES]

    def us2(x):
        return fmt.us(x, 2)

    return {
        "pool_profile_table": fmt.table(header, rows, right=tuple(range(1, len(columns) + 1))),
        "pool_profile_dates": records.days(profiles.values()),
        "pool_profile_commits": " and ".join(sorted({f"`{pr['commit']}`" for pr in profiles.values()})),
        "pool_profile_perf": profiles[POOL_PROFILES[0]]["perf"],
        "pool_profile_others": fmt.span(
            [pr["machine"]["cpu_others_percent"] / 100 for pr in profiles.values()], fmt.pct),
        "pool_lifecycle_span": fmt.span(pool(lifecycle), fmt.pct),
        "pool_lifecycle_us_span": fmt.span(pool(lifecycle_us), us2),
        "wasmtime_lifecycle": fmt.pct(lifecycle["wasmtime"]),
        "wasmtime_lifecycle_us": us2(lifecycle_us["wasmtime"]),
        "pool_waiting_us_span": fmt.span(pool(waiting), us2),
        "pool_waiting_span": fmt.span([_share(kept[p][0], WAITING) for p in POOL_PROFILES],
                                      lambda x: fmt.pct(x, 1)),
        "pool_socket_span": fmt.span([_share(kept[p][0], SOCKET) for p in POOL_PROFILES],
                                     lambda x: fmt.pct(x, 1)),
        "pool_socket_us_span": fmt.span(pool(socket), us2),
        "wasmtime_socket_us": us2(socket["wasmtime"]),
        "pool_page_faults_span": fmt.span(
            [_share(kept[p][0], "page faults") for p in POOL_PROFILES], lambda x: fmt.pct(x, 1)),
        "wasmtime_waiting_us": us2(waiting["wasmtime"]),
    }


def _profile_figures(runs):
    profile = records.json_of(PROFILE)
    means = {
        ("cost", "new"): fmt.mean(_series(runs, lambda r: _cost(r)[("wasmtime", "new")]["cpu_us"])),
        ("cost", "kept-alive"): fmt.across(
            _series(runs, lambda r: _cost(r)[("wasmtime", "kept-alive")]["cpu_us"]))[0],
    }
    stretches = {}
    for s in profile["stretches"]:
        key = (s["experiment"], s.get("connection") or f"{s.get('clients')} clients")
        stretches[key] = s
    io_key = next(k for k in stretches if k[0] == "io")
    io_level = stretches[io_key]["clients"]
    means[io_key] = fmt.across(_series(runs, lambda r: next(
        row["platform_cpu_us"] for row in _io(r)[0]["io_cpu"]
        if row["platform"] == "wasmtime" and row["level"] == io_level)))[0]
    order = [("cost", "kept-alive"), ("cost", "new"), io_key]
    parts = []
    for key in order:
        for part in stretches[key]["parts"]:
            if part["part"] not in parts:
                parts.append(part["part"])

    def share(key, part):
        return _share(stretches[key], part)

    kept = {part: share(("cost", "kept-alive"), part) for part in parts}
    if max(kept.values()) > DOMINANT or set(sorted(kept, key=kept.get)[-2:]) != {HTTP_PART, WAITING}:
        raise ValueError("the prose says no part dominates the kept-alive warm path and waking "
                         "threads and the HTTP server take the largest shares")
    rows = [[part, *(f"{fmt.pct(share(k, part), 1)} · {fmt.us(share(k, part) * means[k], 2)}"
                     for k in order)] for part in parts]
    rows.append(["**all** (samples)", *(f"{fmt.pct(1)} · {fmt.us(means[k], 3)} "
                                        f"({stretches[k]['samples']:,})" for k in order)])
    header = ["part of the warm path", "one client, kept alive", "one client, new connection",
              f"I/O, {io_level:,} clients"]
    return {
        "profile_table": fmt.table(header, rows, right=(1, 2, 3)),
        "profile_date": profile["date_utc"][:10],
        "profile_commit": f"`{profile['commit']}`",
        "profile_hz": f"{profile['frequency_hz']:,}",
        "profile_perf": profile["perf"],
        "profile_io_clients": f"{io_level:,}",
        "profile_outbound_share": fmt.pct(share(io_key, OUTBOUND)),
        "profile_connection_share_io": fmt.pct(share(io_key, "connection set-up and tear-down")),
        "profile_connection_share_new": fmt.pct(
            share(("cost", "new"), "connection set-up and tear-down")),
        "profile_http_share_kept": fmt.pct(kept[HTTP_PART]),
        "profile_waiting_share_kept": fmt.pct(kept[WAITING]),
    }


# ------------------------------------------------------------------------------------------ cut
def _cut_table(prefix, key):
    """Before/after of one change: `CUT/<prefix>-{before,after}-N` runs of experiment 9, as
    figures `<key>_…`."""
    runs = records.runs(f"{CUT}/{prefix}-*/summary.json")
    by_build = {"before": [], "after": []}
    for run in runs:
        build = run.split("/")[-2][len(prefix) + 1:].split("-")[0]
        by_build[build].append({r["connection"]: r for r in records.json_of(run)["cost"]})
    if min(len(v) for v in by_build.values()) < 3:
        raise ValueError(f"{CUT}/{prefix}: fewer than three runs of a build")
    rows, figures = [], {}
    for connection in ("new", "kept-alive"):
        for what, label in (("cpu_us", "host CPU"), ("executor_us", "inside the executor")):
            before = [r[connection][what] for r in by_build["before"]]
            after = [r[connection][what] for r in by_build["after"]]
            change = fmt.mean(after) / fmt.mean(before) - 1
            if change >= 0:
                raise ValueError(f"the prose says {prefix} cut the cost; {what} rose by {change}")
            rows.append([CONNECTIONS[connection], label, fmt.mean_and_interval(before, fmt.us),
                         fmt.mean_and_interval(after, fmt.us), fmt.pct(change)])
            figures[f"{key}_{what}_{connection.replace('-', '_')}"] = fmt.pct(-change)
    record = records.json_of(runs[0])
    figures[f"{key}_table"] = fmt.table(
        ["connection", "per warm activation", "before, mean [95 % interval]",
         "after, mean [95 % interval]", "change"], rows)
    figures[f"{key}_runs"] = str(len(by_build["before"]))
    figures[f"{key}_activations"] = f"{record['cost'][0]['activations']:,}"
    return figures


def _cut_figures():
    figures = _cut_table("cost", "cut")
    figures.update(_cut_table("wamr-cost", "wamr_cut"))
    for runtime in POOL_PROFILES:
        figures.update(_cut_table(f"{runtime}-threads", f"{runtime}_threads_cut"))
        figures.update(_cut_table(f"{runtime}-runtime", f"{runtime}_runtime_cut"))
        figures.update(_cut_table(f"{runtime}-deadline", f"{runtime}_deadline_cut"))
    figures.update(_cut_waiting())
    figures.update(_cut_memory())
    figures.update(_cut_io())
    return figures


def _cut_waiting():
    """The share of waking threads in the pool builds' kept-alive warm path, in the profiles
    of each stage: before connection threads (`CUT/profile-R-before`), with them
    (`CUT/profile-R-threads`), with a runtime of each thread's own (`CUT/profile-R-runtime`),
    and in those of the build measured now."""
    def waiting(path):
        profile = records.json_of(path)
        return profile, _share(_cost_stretch(profile, "kept-alive"), WAITING)

    paths = [f"{CUT}/profile-{{p}}-{stage}/breakdown.json"
             for stage in ("before", "threads", "runtime")]
    stages = [{p: waiting(path.format(p=p)) for p in POOL_PROFILES}
              for path in (*paths, "platform-cost/profile-{p}/breakdown.json")]
    for earlier, later in zip(stages, stages[1:]):
        if any(later[p][1] >= earlier[p][1] for p in POOL_PROFILES):
            raise ValueError("the prose says waking threads takes a smaller share with each of "
                             "the three changes")

    def commits(stage):
        return " and ".join(sorted({f"`{profile['commit']}`" for profile, _ in stage.values()}))

    def shares(stage):
        return fmt.span([w for _, w in stage.values()], lambda x: fmt.pct(x, 1))

    before, threads, runtime, now = stages
    return {
        "threads_cut_profile_commit": commits(before),
        "threads_cut_waiting_before": shares(before),
        "runtime_cut_profile_commit": commits(threads),
        "threads_cut_waiting_after": shares(threads),
        "deadline_cut_profile_commit": commits(runtime),
        "runtime_cut_waiting_after": shares(runtime),
        "deadline_cut_waiting_after": shares(now),
    }


def _cut_io():
    """Before/after of the connections a container keeps: `CUT/io-{before,after}-N`, runs of
    experiment 2 on the wasmtime build, as figures `io_cut_…`."""
    by_build = {"before": [], "after": []}
    for path in records.runs(f"{CUT}/io-*/summary.json"):
        by_build[path.split("/")[-2].split("-")[1]].append(_io_record(path))
    if min(len(v) for v in by_build.values()) < 3:
        raise ValueError(f"{CUT}/io: fewer than three runs of a build")
    platform = "wasmtime"
    first, _ = by_build["before"][0]
    levels = sorted({row["level"] for row in first["io_cpu"]})
    rows, figures = [], {}
    for level in levels:
        cpu = {b: [_io_cpu(io, platform, level) for io in runs] for b, runs in by_build.items()}
        ideal = {b: [_io_ideal(io, platform, level) for io in runs]
                 for b, runs in by_build.items()}
        change = fmt.mean(cpu["after"]) / fmt.mean(cpu["before"]) - 1
        if change >= 0:
            raise ValueError(f"the prose says kept connections cut the I/O cost; at {level} "
                             f"clients it rose by {change}")
        rows.append([f"{level:,}", fmt.mean_and_interval(cpu["before"], fmt.us),
                     fmt.mean_and_interval(cpu["after"], fmt.us), fmt.pct(change),
                     fmt.mean_and_interval(ideal["before"], fmt.pct),
                     fmt.mean_and_interval(ideal["after"], fmt.pct)])
        figures[f"io_cut_cpu_{level}"] = fmt.pct(-change)
        figures[f"io_cut_ideal_{level}_before"] = fmt.pct(fmt.mean(ideal["before"]))
        figures[f"io_cut_ideal_{level}_after"] = fmt.pct(fmt.mean(ideal["after"]))
    figures["io_cut_table"] = fmt.table(
        ["clients", "CPU per I/O activation, before", "after", "change",
         "rate, of the ideal, before", "after"], rows, right=(0, 1, 2, 3, 4, 5))
    # The profile that led to it: the one of the build before, kept beside these runs.
    profile = records.json_of(f"{CUT}/profile-wasmtime-before/breakdown.json")
    io_stretch = next(st for st in profile["stretches"] if st["experiment"] == "io")
    figures["io_cut_outbound_before"] = fmt.pct(_share(io_stretch, OUTBOUND))
    now = next(st for st in records.json_of(PROFILE)["stretches"] if st["experiment"] == "io")
    if _share(now, OUTBOUND) >= _share(io_stretch, OUTBOUND):
        raise ValueError("the prose says the outbound call's share fell with kept connections")
    figures["io_cut_profile_clients"] = f"{io_stretch['clients']:,}"
    figures["io_cut_profile_commit"] = f"`{profile['commit']}`"
    figures["io_cut_runs"] = str(len(by_build["before"]))
    figures["io_cut_levels"] = " and ".join(f"{level:,}" for level in levels)
    return figures


def _cut_memory():
    """RSS per warm container and what one /run of each container left resident, before and
    after, from `wasm-bench footprint` of each build."""
    paths = {"precompiled": "one action", "precompiled, distinct actions": "distinct actions"}
    rows, figures = [], {}
    for code, label in paths.items():
        cells = []
        for build in ("before", "after"):
            record = records.json_of(f"{CUT}/footprint-{build}/summary.json")
            row = next(r for r in record["results"] if r["code"] == code)
            left = (row["after_one_run_each"]["total_kib"] - row["after_init"]["total_kib"]) \
                / row["containers"]
            cells.append((row["per_warm_container_kib"], left, row["containers"]))
        (per_before, left_before, n), (per_after, left_after, _) = cells
        if label == "one action" and abs(per_after - per_before) > UNCHANGED_KIB:
            raise ValueError("the prose says containers of one action cost what they cost before")
        rows.append([f"{n:,} containers of {label}", fmt.kib(per_before), fmt.kib(per_after),
                     fmt.kib(left_before), fmt.kib(left_after)])
        key = label.replace(" ", "_")
        figures[f"cut_per_{key}_before"] = fmt.kib(per_before)
        figures[f"cut_per_{key}_after"] = fmt.kib(per_after)
        figures[f"cut_left_{key}"] = fmt.kib(left_after - left_before)
    figures["cut_memory_table"] = fmt.table(
        ["echo, precompiled", "RSS per warm container, before", "after",
         "left resident by one /run each, per container, before", "after"], rows,
        right=(1, 2, 3, 4))
    return figures


def _conditions(runs):
    return records.conditions_table([(f"{i}, {part}", f"{run}/{part}/summary.json")
                                     for i, run in enumerate(runs, 1) for part in ("cost", "io")])


def figures():
    runs = records.repeated(RUNS, parts=("cost/summary.json", "io/summary.json"))
    first = _cost(runs[0])
    keys = [(p, c) for p in ("wasmtime", "wasmer", "wamr", DOCKER, "native")
            for c in ("new", "kept-alive", None) if (p, c) in first]
    figures = {
        "runs": str(len(runs)),
        "conditions": _conditions(runs),
        "cost_table": _cost_table(runs, keys),
        "activations": f"{first[('wasmtime', 'new')]['activations']:,}",
    }
    figures.update(_ratio_figures(runs))
    figures.update(_earlier_day_figures(runs))
    figures.update(_io_figures(runs))
    figures.update(_profile_figures(runs))
    figures.update(_pool_profile_figures(runs))
    figures.update(_cut_figures())
    return figures

"""Reading the committed records under eval/results/."""

import csv
import gzip
import io
import json
import re

from report import fmt
from report.paths import RECORDS


def path(relative):
    full = RECORDS / relative
    if not full.exists():
        raise FileNotFoundError(f"eval/results/{relative}")
    return full


def json_of(relative):
    return json.loads(path(relative).read_text())


def csv_rows(relative):
    """The rows of a CSV record, plain or gzipped, as dicts of strings."""
    full = path(relative)
    raw = gzip.decompress(full.read_bytes()) if full.suffix == ".gz" else full.read_bytes()
    return list(csv.DictReader(io.StringIO(raw.decode())))


def runs(relative_glob):
    """The records matching a glob under eval/results/ (e.g. "repeated/run-*/summary.json"),
    as relative paths in order; none is an error."""
    found = sorted((str(p.relative_to(RECORDS)) for p in RECORDS.glob(relative_glob)),
                   key=_natural)
    if not found:
        raise FileNotFoundError(f"eval/results/{relative_glob}")
    return found


def _natural(path):
    """A path's sort key with its numbers as numbers: run-2 before run-10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", path)]


def repeated(relative_glob, parts=("",), build=lambda record: record.get("commit")):
    """The runs matching a glob, checked to be repeats: at least three, every record of them
    (each run's `parts`, paths under it) of one known build (`build` of the record; by default
    its commit)."""
    found = runs(relative_glob)
    if len(found) < 3:
        raise ValueError(f"{relative_glob}: {len(found)} runs; repeated figures need at least three")
    builds = {build(json_of(f"{run}/{part}".rstrip("/"))) for run in found for part in parts}
    if len(builds) != 1 or None in builds:
        raise ValueError(f"{relative_glob}: the runs are of different or unknown builds: {builds}")
    return found


def days(recorded):
    """The days records were started on (their `date_utc`), in order: '2026-12-06 and 2026-12-07'."""
    return " and ".join(sorted({record["date_utc"][:10] for record in recorded}))


def started(record):
    """When a record's run started, to the minute (UTC): '2026-12-07 16:54'."""
    return record["date_utc"][:16].replace("T", " ")


def conditions_table(labelled):
    """The table of each run's conditions, one row per (label, record) pair: when it started,
    the commit, the machine, its load and the other processes' share of the CPU, its length."""
    rows = []
    for label, relative in labelled:
        record = json_of(relative)
        machine = record["machine"]
        rows.append([label, started(record), f"`{record['commit']}`",
                     f"{machine['cpu']}, {machine['logical_cpus']} CPUs",
                     f"{fmt.load(machine['loadavg_start'])} → {fmt.load(machine['loadavg_end'])}",
                     fmt.pct(machine["cpu_others_percent"] / 100),
                     f"{fmt.number(record['wall_seconds'] / 60, 2)} min"])
    return fmt.table(["run", "started (UTC)", "commit", "machine", "load average, start → end",
                      "other processes' CPU", "length"], rows)

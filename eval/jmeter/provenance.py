#!/usr/bin/env python3
"""Prints one JMeter plan run's provenance as JSON, as wasm-bench's records carry it: when it
started (UTC), the commit it ran from (`-dirty` when tracked files other than the records
differ from it), and the machine with its load average at the start and now.

    provenance.py STARTED_UTC LOADAVG_AT_START
"""

import json
import os
import pathlib
import platform
import sys

# The commit as every other record names it (eval/engines.py, beside wasm-bench's own).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from engines import commit_measured  # noqa: E402


def field(path, name):
    with open(path) as text:
        for line in text:
            key, _, value = line.partition(":")
            if key.strip() == name:
                return value.strip()
    return None


def main(started_utc, loadavg_start):
    with open("/proc/loadavg") as loadavg:
        loadavg_end = loadavg.read().strip()
    json.dump({
        "date_utc": started_utc,
        "commit": commit_measured(),
        "machine": {
            "cpu": field("/proc/cpuinfo", "model name"),
            "logical_cpus": os.cpu_count(),
            "kernel": platform.release(),
            "memory": field("/proc/meminfo", "MemTotal"),
            "loadavg_start": loadavg_start,
            "loadavg_end": loadavg_end,
        },
    }, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main(*sys.argv[1:3])

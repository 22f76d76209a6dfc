#!/usr/bin/env python3
"""Warm /runs of one JavaScript or Python action on two executor builds side by side.

    side_by_side.py BEFORE_BINARY AFTER_BINARY --language js|py --rounds N --out FILE.json

Each binary's backend is read from its name (`wasm-executor-BACKEND`). Both executors run at
once, each with the language's engine from actions/dist and one container of eval/engines.py's
action for the language, warmed by 20 /runs; then each round sends one
warm /run to each, the order alternating round by round, and takes the client's time and the
executor's own (`eval/engines.py`'s `executor_ms` before and after; no /init comes between).
Medians and means per build.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "eval"))
import engines  # noqa: E402  (eval/engines.py: its actions, its Executor)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--language", default="js", choices=sorted(engines.LANGUAGES))
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    spec = engines.LANGUAGES[args.language]
    value = {"kind": spec["kind"], "binary": False, "code": spec["source"]}
    work = tempfile.mkdtemp(prefix="side-by-side-")
    executors = {}
    for name, binary in (("before", args.before), ("after", args.after)):
        # eval/engines.py's Executor starts target/release's build: point it at this one.
        engines.BIN = pathlib.Path(binary).parent
        (pathlib.Path(work) / name).mkdir()
        backend = pathlib.Path(binary).name.removeprefix("wasm-executor-")
        ex = engines.Executor(backend, pathlib.Path(work) / name, languages=(args.language,))
        executors[name] = ex
    load_before = os.getloadavg()
    samples = {name: {"client_ms": [], "executor_ms": []} for name in executors}
    try:
        for ex in executors.values():
            engines.cold(ex, "warm", value, {"name": "Ada"})
            for _ in range(20):
                ex.request("POST", "/warm/run", {"value": {"name": "Ada"}})
        names = list(executors)
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                ex = executors[name]
                before = engines.executor_ms(ex)
                status, text, ms = ex.timed("POST", "/warm/run", {"value": {"name": "Ada"}})
                engines.expect(status, text, f"{name} warm run")
                samples[name]["client_ms"].append(ms)
                samples[name]["executor_ms"].append(engines.executor_ms(ex) - before)
    finally:
        for ex in executors.values():
            ex.stop()
    result = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "language": args.language, "rounds": args.rounds,
        "binaries": {"before": args.before, "after": args.after},
        "load_avg": [load_before, os.getloadavg()],
        "builds": {name: {k: {"median": statistics.median(v), "mean": statistics.mean(v)}
                          for k, v in s.items()} for name, s in samples.items()},
    }
    pathlib.Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for name, figures in result["builds"].items():
        print(name, {k: round(v["median"], 3) for k, v in figures.items()})


main()

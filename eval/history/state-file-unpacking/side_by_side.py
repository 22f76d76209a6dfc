#!/usr/bin/env python3
"""Cold starts from a state file on two wasmtime executor builds side by side.

    side_by_side.py BEFORE_BIN_DIR AFTER_BIN_DIR --rounds N --out FILE.json

Each directory holds a build's wasm-executor-wasmtime and its wasm-precompile (with
wasm-precompile-snapshot beside it). Each build pre-initialises eval/engines.py's JavaScript and
Python actions with its own precompiler (so each gets the state file its precompiler makes),
then both executors run at once with the engines from actions/dist; each round sends every
language's state file, zipped under a name of the round's (an upload neither has seen), to
each executor as /init and a first /run, the order alternating round by round, and takes the
client's time and the executor's own (eval/engines.py's `cold_both`). Medians and means per
build and language, and the state files' sizes.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "eval"))
import engines  # noqa: E402  (eval/engines.py: its actions, its Executor, its timings)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    languages = ("js", "py")
    work = pathlib.Path(tempfile.mkdtemp(prefix="side-by-side-"))
    executors, states = {}, {}
    for name, bin_dir in (("before", args.before), ("after", args.after)):
        # eval/engines.py runs target/release's build: point it at this one.
        engines.BIN = pathlib.Path(bin_dir).resolve()
        (work / name).mkdir()
        states[name] = {lang: engines.snapshot_of(lang, work / name).read_bytes()
                        for lang in languages}
        executors[name] = engines.Executor("wasmtime", work / name, languages=languages)
    load_before = os.getloadavg()
    samples = {name: {lang: {"client_ms": [], "executor_ms": []} for lang in languages}
               for name in executors}
    try:
        for ex in executors.values():
            for lang in languages:
                spec = engines.LANGUAGES[lang]
                source = {"kind": spec["kind"], "binary": False, "code": spec["source"]}
                engines.cold(ex, f"warm-{lang}", source, {"name": "Ada"})
        names = list(executors)
        for r in range(args.rounds):
            for lang in languages:
                for name in names if r % 2 == 0 else names[::-1]:
                    ex, cid = executors[name], f"{lang}{r}"
                    value = {"kind": engines.LANGUAGES[lang]["kind"], "binary": True,
                             "code": engines.state_zip(states[name][lang], f"round{r}")}
                    client, own = engines.cold_both(ex, cid, value, {"name": "Ada"})
                    samples[name][lang]["client_ms"].append(client)
                    samples[name][lang]["executor_ms"].append(own)
                    ex.request("POST", f"/{cid}/destroy")
    finally:
        for ex in executors.values():
            ex.stop()
    result = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rounds": args.rounds,
        "binaries": {"before": args.before, "after": args.after},
        "load_avg": [load_before, os.getloadavg()],
        "state_file_bytes": {name: {lang: len(b) for lang, b in s.items()}
                             for name, s in states.items()},
        "builds": {name: {lang: {k: {"median": statistics.median(v), "mean": statistics.mean(v)}
                                 for k, v in figures.items()}
                          for lang, figures in by_lang.items()}
                   for name, by_lang in samples.items()},
    }
    pathlib.Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for name, by_lang in result["builds"].items():
        for lang, figures in by_lang.items():
            print(name, lang, {k: round(v["median"], 3) for k, v in figures.items()})


main()

#!/usr/bin/env python3
"""Smoke test of the native action binaries (actions/build.sh --native).

Runs each binary in actions/dist/native with a sample argv[1] (and the same text on stdin, as
the executor does), takes the last non-empty stdout line as the result and checks it against
the expected fields. Prints 'N passed, N failed' and exits non-zero on any failure.

    python3 actions/smoke.py [--bin-dir DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = tempfile.mkdtemp(prefix="ow-smoke-")

# (action, params, expected fields of the result; a callable checks the whole result)
CASES = [
    ("add", {"param1": 2, "param2": 2}, {"result": 4}),
    ("add", {"param1": 1.5, "param2": 2}, {"result": 3.5}),
    ("add", {"param1": "x", "param2": 2}, lambda r: "error" in r),
    ("add", {}, lambda r: "missing" in r.get("error", "")),
    ("echo", {"a": [1, {"b": None}], "__log": ["l1"], "__err": ["e1"]},
     {"a": [1, {"b": None}], "__log": ["l1"], "__err": ["e1"]}),
    ("hash", {"iterations": 0, "input": ""},
     {"digest": "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
      "iterations": 0}),
    ("hash", {"iterations": 1000},
     {"digest": "977a454cb726c82c003b9fcab30caac4f33fee50ec7aa4f6e84bed5ecbb9320d"}),
    ("prime", {}, {"limit": 1000000, "count": 78498, "largest": 999983}),
    ("prime", {"limit": 1}, {"count": 0, "largest": None}),
    ("filesys", {"dir": CACHE, "file": "a.txt", "content": "hello"},
     {"written": 5, "read": "hello", "entries": ["a.txt"]}),
    ("filesys", {"read_path": os.path.join(CACHE, "a.txt")}, {"read": "hello"}),
    ("filesys", {"read_path": os.path.join(CACHE, "missing")}, lambda r: "read_error" in r),
    ("clock", {}, lambda r: r["epoch_ms"] > 1_600_000_000_000 and r["elapsed_ns"] >= 0),
    ("random", {"bytes": 16}, lambda r: len(r["hex"]) == 32),
    ("env", {"k": "v"}, lambda r: r["argv_count"] == 2 and r["stdin_matches_argv"]
     and r["context"].get("__OW_NAMESPACE") == "smoke" and "__OW_NAMESPACE" not in r["env"]),
    ("counter", {}, {"count": 1}),
    ("memhog", {"mb": 4}, {"allocated_mb": 4}),
    ("loop", {}, {"ok": True}),
    ("loop", {"ms": 20}, {"ok": True, "ms": 20}),
    ("panic", {"ok": True}, {"ok": True}),
    ("big", {"rounds": 10}, lambda r: r["rounds"] == 10 and len(r["checksum"]) == 16),
    ("net", {"url": "ftp://example.com/"}, lambda r: "not permitted" in r.get("error", "")),
    ("net", {"url": "http://127.0.0.1:1/"}, lambda r: "failed" in r.get("error", "")),
    ("wordcount", {"text": "the quick  brown\nfox", "other": {"text": "x"}},
     {"words": 4, "chars": 20}),
    ("wordcount", {"no": 1}, lambda r: "error" in r),
]


def result_of(stdout):
    lines = [line for line in stdout.splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else None


def check(expected, result):
    if callable(expected):
        return bool(expected(result))
    return isinstance(result, dict) and all(result.get(k) == v for k, v in expected.items())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin-dir", default=os.path.join(HERE, "dist", "native"))
    args = ap.parse_args()
    env = dict(os.environ, __OW_NAMESPACE="smoke", __OW_DEADLINE="4102444800000")
    env.pop("RUST_BACKTRACE", None)
    passed = failed = 0
    for action, params, expected in CASES:
        text = json.dumps(params)
        binary = os.path.join(args.bin_dir, action)
        try:
            proc = subprocess.run([binary, text], input=text, capture_output=True, text=True,
                                  env=env, timeout=60)
            result = result_of(proc.stdout)
            ok = proc.returncode == 0 and check(expected, result)
        except Exception as e:  # missing binary, bad JSON, failed predicate ...
            proc, result, ok = None, repr(e), False
        if ok:
            passed += 1
        else:
            failed += 1
            rc = proc.returncode if proc else "-"
            print(f"FAIL {action} {text}: rc={rc} result={result!r}", file=sys.stderr)
    # A panic must abort with a non-zero status and print no result.
    proc = subprocess.run([os.path.join(args.bin_dir, "panic"), '{"message": "boom"}'],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0 and "boom" in proc.stderr and result_of(proc.stdout) is None:
        passed += 1
    else:
        failed += 1
        print(f"FAIL panic: rc={proc.returncode} stdout={proc.stdout!r}", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

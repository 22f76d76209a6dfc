#!/usr/bin/env python3
"""One-line summaries of JMeter CSV result files written by the plans in src/test/jmeter.

    summarize.py cold-start.csv mixed.csv realistic.csv
    summarize.py --by-label realistic.csv        # plus one line per sampler label
    summarize.py --by-threads mixed.csv          # plus one line per concurrency level (grpThreads)
    summarize.py --json mixed.csv                # the same figures as a JSON list, one object per file

Columns used: timeStamp, elapsed, label, responseCode, success, grpThreads, Latency, and the
sample variables cold_start / platform (pom.xml: sample_variables=cold_start,platform,action_name).
cold_start is "true"/"false" from the gateway's X-Cold-Start header, "unknown" when the answer
had no such header (e.g. a connection error).

Exit status: 0; 1 when a file has no sample or no successful sample, or when --max-error-pct is
given and a file's error share exceeds it; 2 on bad usage or an unreadable file.
Standard library only.
"""

import argparse
import csv
import json
import os
import sys
from collections import Counter, defaultdict


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list (p in 0..100); None when empty."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * p // 100))  # ceil(n * p / 100), at least 1
    return sorted_values[int(rank) - 1]


def load(path):
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            return [], []
        fields = [name.strip().strip('"') for name in reader.fieldnames]
        reader.fieldnames = fields
        missing = {"timeStamp", "elapsed", "success"} - set(fields)
        if missing:
            raise ValueError("not a JMeter CSV with field names (missing %s)" % ", ".join(sorted(missing)))
        rows = []
        for row in reader:
            if row.get("timeStamp") is None or not row["timeStamp"].strip().isdigit():
                continue  # a repeated header or a broken line
            rows.append(row)
        return fields, rows


def stats(rows, has_cold):
    n = len(rows)
    ok = [r for r in rows if r.get("success", "").strip().lower() == "true"]
    errors = n - len(ok)
    elapsed = sorted(int(r["elapsed"]) for r in rows)
    ok_elapsed = sorted(int(r["elapsed"]) for r in ok)
    ttfb = sorted(int(r["Latency"]) for r in rows if (r.get("Latency") or "").strip().isdigit())
    if rows:
        start = min(int(r["timeStamp"]) for r in rows)
        end = max(int(r["timeStamp"]) + int(r["elapsed"]) for r in rows)
        span_s = max(end - start, 1) / 1000.0
    else:
        span_s = 0.0
    codes = Counter(r.get("responseCode", "") for r in rows
                    if r.get("success", "").strip().lower() != "true")
    out = {
        "samples": n,
        "errors": errors,
        "error_pct": round(100.0 * errors / n, 2) if n else 0.0,
        "error_codes": dict(codes.most_common()),
        "p50_ms": percentile(elapsed, 50),
        "p95_ms": percentile(elapsed, 95),
        "p99_ms": percentile(elapsed, 99),
        "max_ms": elapsed[-1] if elapsed else None,
        "mean_ms": round(sum(elapsed) / n, 1) if n else None,
        "p50_ok_ms": percentile(ok_elapsed, 50),
        "p50_latency_ms": percentile(ttfb, 50),
        "span_s": round(span_s, 3),
        "throughput_rps": round(n / span_s, 2) if span_s else 0.0,
    }
    if has_cold:
        cold = Counter((r.get("cold_start") or "").strip().lower() for r in rows)
        out["cold"] = cold.get("true", 0)
        out["warm"] = cold.get("false", 0)
        out["cold_unknown"] = n - out["cold"] - out["warm"]
        cold_ms = sorted(int(r["elapsed"]) for r in ok
                         if (r.get("cold_start") or "").strip().lower() == "true")
        warm_ms = sorted(int(r["elapsed"]) for r in ok
                         if (r.get("cold_start") or "").strip().lower() == "false")
        out["p50_cold_ms"] = percentile(cold_ms, 50)
        out["p50_warm_ms"] = percentile(warm_ms, 50)
    else:
        out["cold"] = out["warm"] = out["cold_unknown"] = None
        out["p50_cold_ms"] = out["p50_warm_ms"] = None
    return out


def fmt_ms(v):
    return "-" if v is None else "%dms" % v


def line(name, s, platforms=None, rps_note=None):
    parts = ["%-12s" % name,
             "samples=%d" % s["samples"],
             "errors=%d (%.1f%%)" % (s["errors"], s["error_pct"])]
    if s["error_codes"]:
        codes = ",".join("%s:%d" % (c or "?", k) for c, k in list(s["error_codes"].items())[:3])
        parts[-1] += " [%s]" % codes
    parts += ["median=%s" % fmt_ms(s["p50_ms"]),
              "p95=%s" % fmt_ms(s["p95_ms"]),
              "median_latency=%s" % fmt_ms(s["p50_latency_ms"])]
    if s["cold"] is None:
        parts.append("cold=n/a (no cold_start column)")
    else:
        parts.append("cold=%d warm=%d unknown=%d" % (s["cold"], s["warm"], s["cold_unknown"]))
        parts.append("median_cold=%s median_warm=%s" % (fmt_ms(s["p50_cold_ms"]), fmt_ms(s["p50_warm_ms"])))
    parts.append(rps_note if rps_note else "%.1f req/s" % s["throughput_rps"])
    if platforms:
        parts.append("platform=%s" % ",".join(platforms))
    return "  ".join(parts)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="JMeter CSV result files")
    ap.add_argument("--by-label", action="store_true", help="also one line per sampler label")
    ap.add_argument("--by-threads", action="store_true",
                    help="also one line per concurrency level (grpThreads column)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of lines")
    ap.add_argument("--max-error-pct", type=float, default=None,
                    help="exit 1 when a file's share of failed samples is above this")
    args = ap.parse_args(argv)

    status = 0
    report = []
    for path in args.files:
        name = os.path.basename(path)
        if name.endswith(".csv"):
            name = name[:-4]
        try:
            fields, rows = load(path)
        except (OSError, ValueError, csv.Error) as e:
            print("%s: %s" % (path, e), file=sys.stderr)
            return 2
        has_cold = "cold_start" in fields
        s = stats(rows, has_cold)
        platforms = sorted({(r.get("platform") or "").strip() for r in rows} - {"", "unknown"})
        entry = {"plan": name, "file": path, "platforms": platforms, **s}
        if args.by_label:
            groups = defaultdict(list)
            for r in rows:
                groups[r.get("label", "")].append(r)
            entry["by_label"] = {k: stats(v, has_cold) for k, v in sorted(groups.items())}
        if args.by_threads:
            groups = defaultdict(list)
            for r in rows:
                g = (r.get("grpThreads") or "").strip()
                groups[int(g) if g.isdigit() else -1].append(r)
            entry["by_threads"] = {k: stats(v, has_cold) for k, v in sorted(groups.items())}
        report.append(entry)

        if s["samples"] == 0:
            print("%s: no samples" % path, file=sys.stderr)
            status = 1
        elif s["errors"] == s["samples"]:
            print("%s: every sample failed" % path, file=sys.stderr)
            status = 1
        elif args.max_error_pct is not None and s["error_pct"] > args.max_error_pct:
            print("%s: %.1f%% errors, above %.1f%%" % (path, s["error_pct"], args.max_error_pct),
                  file=sys.stderr)
            status = 1

    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return status
    for e in report:
        print(line(e["plan"], e, e["platforms"]))
        for label, s in e.get("by_label", {}).items():
            print(line("  " + label, s))
        for level, s in e.get("by_threads", {}).items():
            # Samples at one level are not one contiguous period (threads stop one by one at
            # the end), so their span says little; closed loop without think time: Little's law.
            note = None
            if level > 0 and s["mean_ms"]:
                note = "~%.1f req/s (threads/mean)" % (level * 1000.0 / s["mean_ms"])
            print(line("  threads=%s" % (level if level >= 0 else "?"), s, rps_note=note))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

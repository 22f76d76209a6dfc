#!/usr/bin/env python3
"""Helpers of eval/openwhisk/run.sh (Python standard library only).

    owtool.py delay-server --port P [--bind ADDR ...] [--delay-ms 300]
        the server `net` actions call: answers every GET after the delay (threaded)
    owtool.py check --api URL [--auth KEY]
        the API answers and the key is accepted (GET /api/v1/namespaces/_/actions?limit=1)
    owtool.py probe --api URL --platform wasm|docker --kind KIND [--auth KEY] [--code-dir DIR]
                    [--image-prefix P] [--image-tag T] [--memory-mb M] [--net-url URL]
        creates probe-<kind>-<random> as the plans do, invokes it blocking twice, prints the
        figures; fails with OpenWhisk's answer when creation or an activation fails
    owtool.py summarize --results DIR [--platforms wasm,docker]
        DIR/<platform>/<level>.csv (+ DIR/meta.json) -> DIR/summary.json and DIR/summary.md

Exit status 0, 1 on a failure (with a message on stderr), 2 on bad usage.
"""

import argparse
import base64
import http.server
import json
import os
import random
import socketserver
import string
import sys
import threading
import time
import urllib.error
import urllib.request

# The JMeter result reading and the nearest-rank percentile of eval/jmeter's summaries.
sys.dont_write_bytecode = True  # no __pycache__ in eval/jmeter
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jmeter"))
import summarize as jmeter_csv  # noqa: E402

percentile = jmeter_csv.percentile

GUEST_KEY = ("23bc46b1-71f6-4ed5-8c54-816aa4f8c502:"
             "123zO3xZCLrMN6v2BKK1dXYFpXlPkccOFqm12CdAsMgRU4VrNZ9lyGVCGuMDGIwP")


def die(msg):
    print("owtool.py: " + msg, file=sys.stderr)
    sys.exit(1)


# ------------------------------------------------------------------------------ delay server
class _Threaded(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


def delay_server(args):
    delay = args.delay_ms / 1000.0

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            time.sleep(delay)
            body = json.dumps({"delayed_ms": args.delay_ms}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    servers = []
    for addr in args.bind:
        try:
            servers.append(_Threaded((addr, args.port), H))
        except OSError as e:
            die("delay server: cannot bind %s:%d: %s" % (addr, args.port, e))
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("delay server on %s port %d, %d ms" % (",".join(args.bind), args.port, args.delay_ms), flush=True)
    servers[0].serve_forever()


# ------------------------------------------------------------------------------ REST
def request(api, auth, method, path, body=None, timeout=120):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(api.rstrip("/") + path, data=data, method=method)
    req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def check(args):
    try:
        status, text = request(args.api, args.auth, "GET", "/api/v1/namespaces/_/actions?limit=1", timeout=10)
    except Exception as e:  # connection refused, timeout, bad URL
        die("no OpenWhisk API at %s: %s" % (args.api, e))
    if status == 401:
        die("%s refused the namespace key (401): %s" % (args.api, text[:200]))
    if status != 200:
        die("%s answered %d to GET /api/v1/namespaces/_/actions: %s" % (args.api, status, text[:300]))
    try:
        info = json.loads(request(args.api, args.auth, "GET", "/api/v1", timeout=10)[1])
    except Exception:
        info = {}
    print("buildno %s, build %s" % (info.get("buildno"), info.get("build")))


# Actions in a language: the kind on the executor's engines, OpenWhisk's own runtime image in
# Docker (eval/baseline/runtimes), and the source file's suffix in the code directory.
LANGUAGE_ACTIONS = {"hello-js": ("nodejs:20", "action-nodejs", ".js"),
                    "hello-py": ("python:3", "action-python", ".py")}


def action_body(args, kind):
    if kind in LANGUAGE_ACTIONS:
        runtime_kind, image, suffix = LANGUAGE_ACTIONS[kind]
        path = os.path.join(args.code_dir, kind + suffix)
        try:
            with open(path) as f:
                source = f.read()
        except OSError as e:
            die("cannot read %s: %s" % (path, e))
        if args.platform == "docker":
            exec_ = {"kind": "blackbox", "code": source, "binary": False, "main": "main",
                     "image": "%s/%s:%s" % (args.image_prefix, image, args.image_tag)}
        else:
            exec_ = {"kind": runtime_kind, "code": source, "binary": False, "main": "main"}
    elif args.platform == "docker":
        exec_ = {"kind": "blackbox", "image": "%s/%s:%s" % (args.image_prefix, kind, args.image_tag)}
    else:
        path = os.path.join(args.code_dir, kind + ".zip")
        try:
            with open(path, "rb") as f:
                code = base64.b64encode(f.read()).decode()
        except OSError as e:
            die("cannot read %s: %s" % (path, e))
        exec_ = {"kind": "wasm:0.1", "code": code, "binary": True}
    body = {"exec": exec_, "limits": {"memory": args.memory_mb, "timeout": args.timeout_ms}}
    if kind == "net":
        body["parameters"] = [{"key": "url", "value": args.net_url}]
        body["annotations"] = [{"key": "net_access", "value": True}]
    return body


def annotation(record, key):
    for a in record.get("annotations") or []:
        if a.get("key") == key:
            return a.get("value")
    return None


def probe(args):
    name = "probe-%s-%s" % (args.kind, "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(8)))
    try:
        status, text = request(args.api, args.auth, "PUT",
                               "/api/v1/namespaces/_/actions/%s?overwrite=true" % name, action_body(args, args.kind))
    except Exception as e:
        die("creating %s at %s: %s" % (name, args.api, e))
    if status != 200:
        die("creating %s (%s) at %s failed: HTTP %d %s" % (name, args.platform, args.api, status, text[:400]))
    out = []
    for i in range(2):
        started = time.time()
        try:
            status, text = request(args.api, args.auth, "POST",
                                   "/api/v1/namespaces/_/actions/%s?blocking=true" % name, {}, timeout=150)
        except Exception as e:
            die("invoking %s at %s: %s" % (name, args.api, e))
        took = (time.time() - started) * 1000
        try:
            record = json.loads(text)
        except ValueError:
            record = {}
        resp = record.get("response") or {}
        if status != 200 or not resp.get("success"):
            die("activation %d of %s (%s) at %s failed: HTTP %d %s" % (i + 1, name, args.platform, args.api,
                                                                      status, text[:600]))
        result = resp.get("result") or {}
        if args.kind == "net" and result.get("status") != 200:
            die("%s at %s could not reach the delay server %s: %s" % (name, args.api, args.net_url,
                                                                       json.dumps(result)[:300]))
        out.append("%s %s: %.0f ms, initTime=%s waitTime=%s duration=%s" % (
            name, "cold" if annotation(record, "initTime") is not None else "warm", took,
            annotation(record, "initTime"), annotation(record, "waitTime"), record.get("duration")))
    request(args.api, args.auth, "DELETE", "/api/v1/namespaces/_/actions/%s" % name)
    print("; ".join(out))


# ------------------------------------------------------------------------------ summary
# The levels run.sh measures, in the order of the tables: (file, title, what is summarised);
# {action} is the cold and warm levels' action (meta.json's, echo unless run.sh --action).
LEVELS = [
    ("cold-1", "cold start, 1 at a time ({action})", "cold"),
    ("warm", "warm activation ({action})", "warm"),
    ("cold-16", "16 concurrent cold starts ({action})", "cold"),
    ("cold-32", "32 concurrent cold starts ({action})", "cold"),
    ("mixed", "mixed (hash/net, McGrath-Brenner ramp)", "all"),
    ("realistic", "realistic (90 % to 2 hot, 10 % to rare actions)", "all"),
]


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def dist(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return {"n": 0, "p50": None, "p95": None, "mean": None}
    return {"n": len(v), "p50": percentile(v, 50), "p95": percentile(v, 95), "mean": round(sum(v) / len(v), 1)}


def level_stats(rows, focus):
    creates = [r for r in rows if r.get("label", "").startswith("create")]
    rows = [r for r in rows if not r.get("label", "").startswith("create")]
    n = len(rows)
    ok = [r for r in rows if r.get("success", "").strip().lower() == "true"]
    cold = [r for r in rows if r.get("cold_start") == "true"]
    warm = [r for r in rows if r.get("cold_start") == "false"]
    if n:
        start = min(int(r["timeStamp"]) for r in rows)
        end = max(int(r["timeStamp"]) + int(r["elapsed"]) for r in rows)
        span = max(end - start, 1) / 1000.0
    else:
        span = 0.0
    # the samples the level is about: cold ones in cold levels, warm ones in warm, all otherwise
    sel = {"cold": [r for r in ok if r.get("cold_start") == "true"],
           "warm": [r for r in ok if r.get("cold_start") == "false"],
           "all": ok}[focus]
    codes = {}
    for r in rows:
        if r.get("success", "").strip().lower() != "true":
            key = r.get("responseCode") or "?"
            codes[key] = codes.get(key, 0) + 1
    return {
        "samples": n,
        "errors": n - len(ok),
        "error_codes": codes,
        "creates": len(creates),
        "create_errors": sum(1 for r in creates if r.get("success", "").strip().lower() != "true"),
        "cold": len(cold),
        "warm": len(warm),
        "unknown": n - len(cold) - len(warm),
        "focus": focus,
        "focus_samples": len(sel),
        "response_ms": dist([num(r["elapsed"]) for r in sel]),
        "init_ms": dist([num(r.get("init_ms")) for r in sel]),
        "wait_ms": dist([num(r.get("wait_ms")) for r in sel]),
        "duration_ms": dist([num(r.get("duration_ms")) for r in sel]),
        # controller receipt -> /run starts: waitTime (incl. container creation) + initTime
        "wait_init_ms": dist([num(r.get("wait_ms")) + (num(r.get("init_ms")) or 0)
                              for r in sel if num(r.get("wait_ms")) is not None]),
        "response_cold_ms": dist([num(r["elapsed"]) for r in ok if r.get("cold_start") == "true"]),
        "response_warm_ms": dist([num(r["elapsed"]) for r in ok if r.get("cold_start") == "false"]),
        "span_s": round(span, 2),
        "throughput_rps": round(len(ok) / span, 2) if span else 0.0,
    }


def plateau_rps(rows, top):
    """Successful activations/s while all `top` threads ran (mixed: after the last join)."""
    rows = [r for r in rows if not r.get("label", "").startswith("create")
            and r.get("success", "").strip().lower() == "true"
            and (r.get("grpThreads") or "").isdigit() and int(r["grpThreads"]) >= top]
    if len(rows) < 2:
        return None
    start = min(int(r["timeStamp"]) for r in rows)
    end = max(int(r["timeStamp"]) + int(r["elapsed"]) for r in rows)
    return round(len(rows) / max((end - start) / 1000.0, 0.001), 2)


def fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float) and not v.is_integer():
        return "%.1f%s" % (v, unit)
    return "%d%s" % (int(v), unit)


def ratio(a, b):
    """docker / wasm, when both are there and wasm > 0."""
    if a is None or b is None or not a:
        return "–"
    return "%.2f×" % (b / a)


def summarize(args):
    platforms = args.platforms.split(",")
    meta = {}
    mpath = os.path.join(args.results, "meta.json")
    if os.path.exists(mpath):
        with open(mpath) as f:
            meta = json.load(f)
    summary = {"meta": meta, "levels": {}}
    for level, title, focus in LEVELS:
        entry = {"title": title.format(action=meta.get("action", "echo")), "focus": focus}
        for p in platforms:
            path = os.path.join(args.results, p, level + ".csv")
            if not os.path.exists(path):
                continue
            rows = jmeter_csv.load(path)[1]
            s = level_stats(rows, focus)
            if level == "mixed":
                tops = [int(r["grpThreads"]) for r in rows if (r.get("grpThreads") or "").isdigit()
                        and not r.get("label", "").startswith("create")]
                if tops:
                    s["plateau_threads"] = max(tops)
                    s["plateau_rps"] = plateau_rps(rows, max(tops))
            entry[p] = s
        if any(p in entry for p in platforms):
            summary["levels"][level] = entry
    with open(os.path.join(args.results, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    a, b = (platforms + [None, None])[:2]
    L = []
    L.append("# JMeter against OpenWhisk: wasm factory vs Docker factory\n")
    L.append("Made by `eval/openwhisk/run.sh` (see [eval/openwhisk/README.md](../../openwhisk/README.md)); "
             "raw rows in `%s/<level>.csv`, all figures in `summary.json`.\n" % "|".join(platforms))
    if meta:
        L.append("| | |\n|---|---|")
        for k in ("date", "mode", "openwhisk_commit", "machine", "cpus", "memory", "load_before", "load_after",
                  "servers", "wasm_api", "docker_api", "wasm_executor", "docker_engine", "settings"):
            if k in meta:
                L.append("| %s | %s |" % (k.replace("_", " "), str(meta[k]).replace("|", "\\|")))
        L.append("")
    L.append("Response time is JMeter's `elapsed` (blocking invoke sent → activation record received, "
             "through controller, invoker and container); `initTime`, `waitTime` and `duration` are the "
             "activation record's. Percentiles are nearest-rank over the samples each row is about "
             "(cold levels: the cold activations; warm: the warm ones; mixed/realistic: all successful). "
             "For Docker the container's creation (`docker pull` attempt, `docker run`, `inspect`) is in "
             "`waitTime`, and `initTime` is only the proxy's `/init`; for wasm the executor creates the "
             "container in `/init`, so compare `waitTime + initTime` (request received → `/run` starts). "
             "The last column is %s / %s (above 1: %s is faster or smaller).\n" % (b, a, a))
    for level, entry in summary["levels"].items():
        L.append("## %s — `%s`\n" % (entry["title"], level))
        L.append("| | %s | %s | %s/%s |" % (a, b, b, a))
        L.append("|---|---|---|---|")
        sa, sb = entry.get(a), entry.get(b)

        def row(label, get, unit=" ms", better_low=True):
            va = get(sa) if sa else None
            vb = get(sb) if sb else None
            r = ratio(va, vb) if better_low else ratio(vb, va)
            L.append("| %s | %s | %s | %s |" % (label, fmt(va, unit), fmt(vb, unit), r))

        def cnt(s):
            return "%d / %d / %d" % (s["cold"], s["warm"], s["unknown"]) if s else "–"
        L.append("| samples (errors) | %s | %s | |" % (
            "%d (%d)" % (sa["samples"], sa["errors"]) if sa else "–",
            "%d (%d)" % (sb["samples"], sb["errors"]) if sb else "–"))
        L.append("| cold / warm / unknown | %s | %s | |" % (cnt(sa), cnt(sb)))
        row("response p50", lambda s: s["response_ms"]["p50"])
        row("response p95", lambda s: s["response_ms"]["p95"])
        row("response mean", lambda s: s["response_ms"]["mean"])
        if entry["focus"] != "warm":
            row("initTime p50 (cold)", lambda s: s["init_ms"]["p50"])
            row("initTime mean (cold)", lambda s: s["init_ms"]["mean"])
        row("waitTime p50", lambda s: s["wait_ms"]["p50"])
        row("waitTime mean", lambda s: s["wait_ms"]["mean"])
        row("duration p50", lambda s: s["duration_ms"]["p50"])
        row("waitTime + initTime p50", lambda s: s["wait_init_ms"]["p50"])
        row("waitTime + initTime mean", lambda s: s["wait_init_ms"]["mean"])
        if entry["focus"] == "all":
            row("response p50 cold", lambda s: s["response_cold_ms"]["p50"])
            row("response p50 warm", lambda s: s["response_warm_ms"]["p50"])
        row("throughput", lambda s: s["throughput_rps"], unit=" /s", better_low=False)
        if level == "mixed":
            row("throughput with all threads", lambda s: s.get("plateau_rps"), unit=" /s", better_low=False)
        L.append("")
    L.append("## Next to the thesis\n")
    L.append("| | thesis (OpenWhisk 1.0.0, server) | here |")
    L.append("|---|---|---|")
    c1 = summary["levels"].get("cold-1", {})
    if c1.get(a) and c1.get(b) and c1[a]["response_ms"]["p50"] and c1[b]["response_ms"]["p50"]:
        ra, rb = c1[a]["response_ms"]["p50"], c1[b]["response_ms"]["p50"]
        here = "%.0f %% lower (p50 %s vs %s ms, whole blocking invoke)" % (100 * (1 - ra / rb), fmt(ra), fmt(rb))
        ia, ib = c1[a]["wait_init_ms"]["p50"], c1[b]["wait_init_ms"]["p50"]
        if ia is not None and ib:
            here += "; waitTime + initTime %.0f %% lower (%s vs %s ms)" % (100 * (1 - ia / ib), fmt(ia), fmt(ib))
        c32 = summary["levels"].get("cold-32", {})
        if c32.get(a) and c32.get(b) and c32[a]["response_ms"]["p50"] and c32[b]["response_ms"]["p50"]:
            ra, rb = c32[a]["response_ms"]["p50"], c32[b]["response_ms"]["p50"]
            here += "; 32 at once: %.0f %% lower (p50 %s vs %s ms)" % (100 * (1 - ra / rb), fmt(ra), fmt(rb))
    else:
        here = "–"
    L.append("| cold start vs Docker | 94 %% lower | %s |" % here)
    mx = summary["levels"].get("mixed", {})
    if mx.get(a) and mx.get(b) and mx[b]["throughput_rps"] and mx[b].get("plateau_rps"):
        # The whole run is the figure; the phase with every thread running is only beside it.
        here = "%.2f× over the whole run (%s vs %s activations/s); %.2f× with all %d threads" % (
            mx[a]["throughput_rps"] / mx[b]["throughput_rps"], fmt(mx[a]["throughput_rps"]),
            fmt(mx[b]["throughput_rps"]), mx[a]["plateau_rps"] / mx[b]["plateau_rps"],
            mx[a].get("plateau_threads", 0))
    else:
        here = "–"
    L.append("| mixed workload throughput vs Docker | 1.6–3.0× server, 2.4–4.2× Raspberry Pi (Table 4.1) | %s |" % here)
    L.append("")
    with open(os.path.join(args.results, "summary.md"), "w") as f:
        f.write("\n".join(L))
    print(os.path.join(args.results, "summary.md"))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("delay-server")
    d.add_argument("--port", type=int, required=True)
    d.add_argument("--bind", action="append", default=None)
    d.add_argument("--delay-ms", type=int, default=300)
    for name in ("check", "probe"):
        c = sub.add_parser(name)
        c.add_argument("--api", required=True)
        c.add_argument("--auth", default=GUEST_KEY)
        if name == "probe":
            c.add_argument("--platform", choices=["wasm", "docker"], required=True)
            c.add_argument("--kind", required=True)
            c.add_argument("--code-dir", default=".")
            c.add_argument("--image-prefix", default="127.0.0.1:5999/owwasm-baseline")
            c.add_argument("--image-tag", default="v1")
            c.add_argument("--memory-mb", type=int, default=128)
            c.add_argument("--timeout-ms", type=int, default=60000)
            c.add_argument("--net-url", default="http://127.0.0.1:8099/")
    s = sub.add_parser("summarize")
    s.add_argument("--results", required=True)
    s.add_argument("--platforms", default="wasm,docker")
    args = ap.parse_args(argv)
    if args.cmd == "delay-server":
        args.bind = args.bind or ["127.0.0.1"]
        delay_server(args)
    elif args.cmd == "check":
        check(args)
    elif args.cmd == "probe":
        probe(args)
    else:
        summarize(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

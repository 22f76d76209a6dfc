#!/usr/bin/env python3
"""The thesis's CPU-bound experiment (its Figure 4.8): the prime sieve of actions/prime as
JavaScript on the executor's engine (QuickJS-NG, itself Wasm) against the same JavaScript on
node's JIT in OpenWhisk's own nodejs runtime (Docker), and the sieve compiled to Wasm from
AssemblyScript and from Rust on the executor. Warm /run times on loopback, round by round so
that the machine's noise falls on every row alike, in one run:

  js-engine        eval/sieve/sieve.js, kind nodejs:20, on each backend's executor
  assemblyscript   eval/sieve/sieve.ts built by eval/sieve/build.sh, on each backend
  rust             actions/dist/prime.wasm, on each backend

The Wasm modules are sent precompiled by wasm-precompile for each backend (on WAMR its AOT
code, as the README recommends; the JavaScript engine runs as each backend loads engines).
  js-node          eval/sieve/sieve.js in owwasm-baseline/action-nodejs (eval/baseline/runtimes),
                   started as OpenWhisk's invoker starts it (with --docker)

Every answer is checked against the sieve's count and largest prime. Writes results.json and
summary.md.

  eval/sieve.py [--backends wasmtime,wasmer,wamr] [--limit 1000000] [--rounds 20] [--docker]
                [--out eval/results/sieve]
"""
import argparse
import base64
import json
import pathlib
import subprocess

import engines

REPO = engines.REPO
SIEVE = REPO / "eval" / "sieve"


def primes_up_to(limit):
    """(count, largest) of the primes up to `limit`, to check every answer."""
    composite = bytearray(limit + 1)
    for i in range(2, int(limit ** 0.5) + 1):
        if not composite[i]:
            composite[i * i::i] = b"\x01" * len(range(i * i, limit + 1, i))
    primes = [n for n in range(2, limit + 1) if not composite[n]]
    return len(primes), (primes[-1] if primes else None)


def assemblyscript_module():
    built = subprocess.run([str(SIEVE / "build.sh")], check=True, capture_output=True, text=True)
    return pathlib.Path(built.stdout.split()[0])


def measure(backend, limit, rounds, expected, docker_image, work):
    def precompiled(module):
        return {"binary": True,
                "code": base64.b64encode(engines.compiled(backend, module, work)).decode()}

    actions = {
        "js-engine": {"kind": "nodejs:20", "binary": False,
                      "code": (SIEVE / "sieve.js").read_text()},
        "assemblyscript": precompiled(assemblyscript_module()),
        "rust": precompiled(engines.DIST / "prime.wasm"),
    }
    params = {"limit": limit}
    ex = engines.Executor(backend, work, languages=("js",))
    node = None
    try:
        for name, value in actions.items():
            engines.cold(ex, name, value, params)
        if docker_image:
            runtimes = engines.docker_runtimes()
            node = runtimes.Container(docker_image, (SIEVE / "sieve.js").read_text(), name="sieve",
                                      params=params, expected=expected)
            node.start()
        samples = {name: [] for name in actions}
        if node:
            samples["js-node"] = []
        for _ in range(rounds):
            for name in actions:
                status, text, ms = ex.timed("POST", f"/{name}/run", {"value": params})
                engines.expect(status, text, f"{backend} {name}")
                if json.loads(text) != expected:
                    raise RuntimeError(f"{backend} {name}: {text}, expected {expected}")
                samples[name].append(ms)
            if node:
                samples["js-node"].append(node.timed_run())
        return {name: engines.summary(values) for name, values in samples.items()}
    finally:
        ex.stop()
        if node:
            node.remove()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="wasmtime")
    parser.add_argument("--limit", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--docker", action="store_true",
                        help="also node's JIT in OpenWhisk's nodejs runtime (image of "
                             "eval/baseline/runtimes/build.sh, on DOCKER_HOST), once")
    parser.add_argument("--out", default=str(REPO / "eval" / "results" / "sieve"))
    args = parser.parse_args()
    count, largest = primes_up_to(args.limit)
    expected = {"limit": args.limit, "count": count, "largest": largest}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = engines.per_backend(
        args.backends.split(","), "eval-sieve-",
        lambda backend, first, work: measure(
            backend, args.limit, args.rounds, expected,
            engines.DOCKER_IMAGES["js"] if args.docker and first else None, work),
        limit=args.limit, rounds=args.rounds, expected=expected)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [f"Prime sieve up to {args.limit:,}, warm /run, {args.rounds} rounds:", "",
             "| backend | action | median | p10 | p90 |", "|---|---|---:|---:|---:|"]
    node = None
    for backend, rows in results["backends"].items():
        node = node or rows.get("js-node")
        for name, s in rows.items():
            lines.append(f"| {backend} | {name} | {s['median_ms']:.2f} ms | {s['p10_ms']:.2f} ms | "
                         f"{s['p90_ms']:.2f} ms |")
    lines += ["", "| backend | JS engine in Wasm / node's JIT | AssemblyScript / node's JIT | "
                  "AssemblyScript / Rust |", "|---|---:|---:|---:|"]
    for backend, rows in results["backends"].items():
        over = lambda a, b: f"{rows[a]['median_ms'] / b['median_ms']:.2f}" if b else "—"  # noqa: E731
        lines.append(f"| {backend} | {over('js-engine', node)} | {over('assemblyscript', node)} | "
                     f"{over('assemblyscript', rows['rust'])} |")
    lines += ["", f"Load average before and after: {results['machine']['load_avg']} → "
                  f"{results['machine']['load_avg_after']}; client-side times on loopback."]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

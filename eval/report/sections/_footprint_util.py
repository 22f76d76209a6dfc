"""Helpers of the footprint section: its records, the binary-size record, deploy/pi's sizing."""

import math
import re

from report import fmt, records
from report.paths import ROOT
from report.sections import _evaluation_util as ev

BUILDS = ev.EXECUTORS
BUILD_NAMES = {"wasmtime": "wasmtime", "wasmer": "wasmer", "wasmer-headless": "wasmer headless",
               "wamr": "WAMR"}
TARGET_NAMES = {
    "x86_64-unknown-linux-gnu": "x86_64",
    "aarch64-unknown-linux-gnu": "aarch64 (64-bit Pi OS, Debian arm64)",
    "armv7-unknown-linux-gnueabihf": "armv7 (32-bit Pi OS)",
}
SIZE_ROW = re.compile(r"^\|\s*(\S+)\s*\|\s*(\S+)\s*\|\s*([\d.]+) MB\s*\|$")

# The 1 GB board's sizing in deploy/pi/systemd/board-1g/: configuration, not measurements. The
# template states them as {{=…}}; board_config_checked() fails when deploy/pi says otherwise.
BOARD_1G = {
    "wasm-executor.conf": {"MemoryMax": "288M", "WASM_EXECUTOR_MAX_CONCURRENT": "4",
                           "WASM_EXECUTOR_DEFAULT_MEMORY_MB": "128",
                           "WASM_EXECUTOR_MAX_MEMORY_MB": "256"},
    "openwhisk-standalone.conf": {"MemoryMax": "480M", "-Xmx": "192m"},
}
EXECUTOR_MEMORY_MAX_MIB = 288  # MemoryMax=288M: systemd's M is 1024 × 1024 bytes


def summary(directory):
    return records.json_of(f"{directory}/summary.json")


def row(summary_record, runtime, code):
    for result in summary_record["results"]:
        if result["runtime"] == runtime and result["code"] == code:
            return result
    raise KeyError(f"no {runtime} / {code} row")


def containers_of(summary_record, result):
    """How many containers a row measured (older records keep it in the config only)."""
    return result.get("containers", summary_record["containers"])


def mib_of_kib(kib):
    return fmt.mib(kib / 1024, 2)


def mib1(mib):
    """MiB to one decimal, so that the ends of a range read alike: 37.5–39.0 MiB."""
    return f"{fmt.fixed(mib, 1)} MiB"


def per_container(result):
    """'44 KiB': RSS per warm container of one run's row."""
    return f"{fmt.number(result['per_warm_container_kib'], 2)} KiB"


def about(x):
    """To two significant digits below 100, three from 100 up: 65.8 → 66, 1842 → 1,840."""
    digits = 2 if x < 100 else 3
    scale = 10 ** (math.floor(math.log10(abs(x))) - digits + 1)
    return fmt.number(round(x / scale) * scale)


def binary_sizes():
    """{(target triple, build): MB} from edge-footprint/binaries.md, its only record of sizes."""
    sizes = {}
    for line in records.path("edge-footprint/binaries.md").read_text().splitlines():
        match = SIZE_ROW.match(line.strip())
        if match:
            sizes[(match.group(1), match.group(2))] = float(match.group(3))
    if not sizes:
        raise ValueError("edge-footprint/binaries.md has no size rows")
    return sizes


def binaries_table(sizes):
    targets = [t for t in TARGET_NAMES if any(key[0] == t for key in sizes)]
    unknown = {key[0] for key in sizes} - set(TARGET_NAMES)
    if unknown:
        raise ValueError(f"binaries.md has targets the prose does not name: {sorted(unknown)}")
    builds = list(BUILD_NAMES)
    rows = [[TARGET_NAMES[t]] + [f"{fmt.fixed(sizes[(t, b)], 1)} MB" if (t, b) in sizes else "—"
                                 for b in builds] for t in targets]
    return fmt.table(["target"] + [BUILD_NAMES[b] for b in builds], rows,
                     right=range(1, len(builds) + 1))


def check_binaries_prose(sizes):
    """The prose explains the empty cells: wasmer with LLVM on x86_64 only, armv7 WAMR only."""
    wasmer_targets = {t for t, b in sizes if b == "wasmer"}
    if wasmer_targets != {"x86_64-unknown-linux-gnu"}:
        raise ValueError(f"the prose says wasmer with LLVM is built for x86_64 only, but the "
                         f"records have it for {sorted(wasmer_targets)}")
    armv7 = {b for t, b in sizes if t == "armv7-unknown-linux-gnueabihf"}
    if armv7 != {"wamr"}:
        raise ValueError(f"the prose says armv7 has a WAMR build only, the records say {armv7}")


def board_config_checked():
    """Fails when deploy/pi's 1 GB sizing no longer has the values the template states."""
    directory = ROOT / "deploy" / "pi" / "systemd" / "board-1g"
    for name, settings in BOARD_1G.items():
        text = (directory / name).read_text()
        for key, value in settings.items():
            pattern = (rf"{re.escape(key)}{re.escape(value)}\b" if key.startswith("-")
                       else rf"\b{re.escape(key)}={re.escape(value)}(?:\s|$)")
            if not re.search(pattern, text, re.M):
                raise ValueError(f"the prose states {key} {value} for the 1 GB board, "
                                 f"deploy/pi/systemd/board-1g/{name} says otherwise")

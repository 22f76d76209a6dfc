#!/usr/bin/env python3
"""Sorts an executor's perf samples into the parts of its warm path, per measured stretch.

    breakdown.py SUMMARY_JSON PERF_SCRIPT [--perf-version V] [--frequency HZ] > breakdown.json
    breakdown.py --show BREAKDOWN_JSON

SUMMARY_JSON is `wasm-bench evaluate`'s record of the run the profile was taken over: its
`cost` rows and `io_cpu` levels carry the CLOCK_MONOTONIC stretch each measured, and the
samples of `perf script -F pid,tid,comm,time,ip,sym,dso` (recorded with `-k CLOCK_MONOTONIC`)
are cut to them. Every sample goes to exactly one part (PARTS, first match); a part's share of
a stretch's samples is its share of the CPU the executor spent there.
"""

import argparse
import collections
import json
import re
import sys

# Parts whose frames may sit anywhere in the stack: the first that matches takes the sample.
PHASES = [
    # wasmtime: the Store's drop and the pooling allocator's reset; wasmer: the Store's and
    # its memories' drops; WAMR: deinstantiation.
    ("instance teardown", re.compile(
        r"Store<T> as core::ops::drop::Drop|StoreOpaque as core::ops::drop::Drop"
        r"|deallocate_module|DecommitQueue|decommit_pages|reset_with_pagemap|drop_in_place<wasmtime::"
        r"|drop_in_place<wasmer::|drop_in_place<wasmer_vm::|wasmer_vm::.*as core::ops::drop::Drop"
        r"|wasm_runtime_deinstantiate|aot_deinstantiate|wasm_deinstantiate"
        r"|Instance<'_> as core::ops::drop::Drop")),
    ("instantiation", re.compile(
        r"InstancePre<T>>::instantiate|pre_instantiate_raw|Instance::new_started|instantiate_async"
        r"|::new_store|WasiCtxBuilder|InstanceAllocator>::allocate|MemoryPool::allocate"
        r"|Store<T>>::new|wasmer::.*Store::new|wasmer::.*Instance::new|create_vm_memory|imports::"
        r"|wasm_runtime_instantiate|aot_instantiate|wasm_instantiate|ParamsFile::new"
        r"|HostState::new|Instance::new")),
    ("the guest's outbound HTTP call (host side)", re.compile(
        r"http_import|wasm_executor::net::|hyper_util::client|hyper::client")),
    ("WASI calls of the guest", re.compile(
        r"wasmtime_wasi|HostFunc::array_call_trampoline|wasi_snapshot_preview1|OutputCapture"
        r"|wasm_executor_wasmer::wasi|::natives::|wasmtime_ssp_|^wasi_|libc_wasi")),
    ("request and response JSON", re.compile(r"serde_json|serde_core::de|RunRequest")),
    ("connection set-up and tear-down", re.compile(
        r"TcpListener::accept|new_accepted|Lingering<Io> as tokio::io::async_write::AsyncWrite>::poll_shutdown"
        r"|drop_in_place<hyper::server::conn|drop_in_place<hyper::proto::h1::conn|ConnectionEnd"
        r"|Connections::register|__x64_sys_accept4|__x64_sys_close|__x64_sys_shutdown")),
]

# Kernel entry points of a sample that entered the kernel: its system call, or a page fault.
SYSCALL = re.compile(r"__(?:x64|se)_sys_(\w+)")
SYSCALL_PARTS = {
    "socket reads and writes (kernel)": {"sendto", "recvfrom", "read", "write", "writev", "readv",
                                         "sendmsg", "recvmsg"},
    "waiting and waking threads": {"futex", "epoll_wait", "epoll_pwait", "epoll_pwait2",
                                   "sched_yield", "nanosleep", "clock_nanosleep"},
    "connection set-up and tear-down": {"accept4", "accept", "close", "shutdown", "epoll_ctl",
                                        "socket", "connect", "setsockopt"},
    "memory mappings": {"madvise", "mmap", "munmap", "mprotect", "mremap"},
}

# User-space layers, taken from the frame nearest the leaf that belongs to one.
LAYERS = [
    ("memory allocator", re.compile(r"^(?:malloc|free|cfree|realloc|calloc|_int_\w+|__libc_\w*alloc"
                                    r"|__rustc::__r\w+alloc|__rust_\w*alloc|__rdl_\w+|alloc::alloc::)")),
    ("waiting and waking threads", re.compile(r"^(?:<?)(?:tokio::runtime|mio::|parking_lot|std::sync"
                                              r"|std::sys::sync|<std::sys::sync|<tokio::runtime)")),
    ("tracing and metrics", re.compile(r"tracing|metrics::")),
    ("the executor's request handling", re.compile(r"wasm_executor")),
    ("HTTP server (hyper, axum, tower)", re.compile(r"hyper|axum|tower|httparse|http::|bytes::")),
]

GUEST_DSO = re.compile(r"^\[JIT\]|perf-\d+\.map$|^//anon|^memfd:")

HEADER = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+(?P<time>\d+\.\d+):\s*$")
FRAME = re.compile(r"^\s*[0-9a-f]+\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


def samples(path):
    """(time, [(symbol, dso)] leaf first) of every sample in `perf script` output."""
    time, frames = None, []
    with open(path, errors="replace") as lines:
        for line in lines:
            if not line.strip():
                if time is not None:
                    yield time, frames
                time, frames = None, []
                continue
            header = HEADER.match(line)
            if header:
                time, frames = float(header["time"]), []
                continue
            frame = FRAME.match(line)
            if frame and time is not None:
                frames.append((frame["sym"], frame["dso"]))
    if time is not None:
        yield time, frames


def part_of(frames):
    """The part of the warm path a sample's stack (leaf first) belongs to."""
    if not frames:
        return "not unwound"
    symbols = [sym for sym, _ in frames]
    for name, pattern in PHASES:
        if any(pattern.search(sym) for sym in symbols):
            return name
    leaf_sym, leaf_dso = frames[0]
    if GUEST_DSO.search(leaf_dso):
        return "guest code"
    if leaf_dso == "[kernel.kallsyms]":
        if any("exc_page_fault" in sym for sym in symbols):
            return "page faults"
        for sym in symbols:
            call = SYSCALL.search(sym)
            if call:
                for name, calls in SYSCALL_PARTS.items():
                    if call[1] in calls:
                        return name
                return "other system calls"
        return "kernel, outside system calls (interrupts, scheduling)"
    for sym in symbols:
        for name, pattern in LAYERS:
            if pattern.search(sym):
                return name
    return "other"


def stretches(summary):
    """The measured stretches of the record: (label, fields, [start, end])."""
    for row in summary.get("cost", []):
        if "monotonic_s" in row:
            yield (f"cost, {row['connection'] or 'process'}",
                   {"experiment": "cost", "connection": row["connection"],
                    "activations": row["activations"], "cpu_us": row["cpu_us"]},
                   row["monotonic_s"])
    for row in summary.get("io_cpu", []):
        yield (f"io, {row['level']} clients",
               {"experiment": "io", "clients": row["level"], "activations": row["activations"],
                "cpu_us": row["platform_cpu_us"]},
               row["monotonic_s"])


def breakdown(summary, script):
    spans = list(stretches(summary))
    counts = [collections.Counter() for _ in spans]
    leaves = [collections.Counter() for _ in spans]
    for time, frames in samples(script):
        for i, (_, _, (start, end)) in enumerate(spans):
            if start <= time <= end:
                counts[i][part_of(frames)] += 1
                if frames:
                    leaves[i][frames[0][0]] += 1
                break
    out = []
    for (label, fields, span), count, leaf in zip(spans, counts, leaves):
        total = sum(count.values())
        out.append(dict(fields, stretch=label, monotonic_s=span, samples=total,
                        parts=[{"part": p, "samples": n} for p, n in count.most_common()],
                        top_leaf_functions=[{"function": f, "samples": n}
                                            for f, n in leaf.most_common(12)]))
    return out


def show(path):
    record = json.load(open(path))
    for stretch in record["stretches"]:
        total = stretch["samples"] or 1
        print(f"\n{stretch['stretch']}: {stretch['samples']} samples, "
              f"{stretch['cpu_us']:.0f} µs of CPU per activation under perf")
        for part in stretch["parts"]:
            share = part["samples"] / total
            print(f"  {100 * share:5.1f} %  {share * stretch['cpu_us']:6.1f} µs  {part['part']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--show", action="store_true", help="print a breakdown.json")
    parser.add_argument("--perf-version", default="")
    parser.add_argument("--frequency", type=int, default=0)
    args = parser.parse_args()
    if args.show:
        show(args.files[0])
        return
    summary_path, script = args.files
    summary = json.load(open(summary_path))
    json.dump({"date_utc": summary.get("date_utc"), "commit": summary.get("commit"),
               "platform": summary["platforms"][0], "perf": args.perf_version,
               "frequency_hz": args.frequency, "machine": summary.get("machine"),
               "stretches": breakdown(summary, script)}, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the checked-in seed corpus of the fuzz targets (fuzz/corpus/<target>/seed-*): small
valid and nearly valid inputs of each kind, so that a short run starts from the interesting
formats instead of from nothing. Deterministic; run it again after changing a format."""

import base64
import hashlib
import io
import json
import pathlib
import struct
import zipfile

HERE = pathlib.Path(__file__).resolve().parent

# A minimal module: a table of one funcref, one memory page, an exported `_start`.
MODULE = bytes.fromhex(
    "0061736d01000000"  # magic, version
    "010401600000"  # type section: () -> ()
    "03020100"  # function section: one function of type 0
    "0404017000 01".replace(" ", "")  # table section: funcref, min 1
    + "0503010001"  # memory section: min 1
    "070a01065f737461727400 00".replace(" ", "")  # export "_start" func 0
    + "0a040102000b"  # code section: one empty body
)


def zipped(entries, method=zipfile.ZIP_DEFLATED):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2021, 1, 1, 0, 0, 0))
            archive.writestr(info, data, compress_type=method)
    return out.getvalue()


def envelope(runtime, payload, signature=b""):
    header = json.dumps(
        {
            "runtime": runtime,
            "runtime_version": "48.0.8",
            "target": "x86_64-unknown-linux-gnu",
            "payload_sha256": hashlib.sha256(payload).hexdigest(),
            "wasm_sha256": hashlib.sha256(MODULE).hexdigest(),
        },
        separators=(",", ":"),
    ).encode()
    return (
        b"OWWASMA1"
        + struct.pack("<I", len(header))
        + header
        + struct.pack("<I", len(signature))
        + signature
        + payload
    )


def lz4_literals(data):
    """An LZ4 block of `data` as literals only (valid, uncompressed)."""
    n = len(data)
    token = min(n, 15) << 4
    extra = b""
    if n >= 15:
        rest = n - 15
        extra = b"\xff" * (rest // 255) + bytes([rest % 255])
    return bytes([token]) + extra + data


def state_file(writes, pages=2):
    """A JavaScript action's state file (executor/decode/src/snapshot_file.rs)."""
    header = json.dumps({
        "language": "JavaScript", "engine_sha256": "ab" * 32, "main": "main",
        "memory_pages": pages, "globals": [["__stack_pointer", {"i32": 4096}]],
        "output": [{"stderr": False, "text": "loaded"}], "made_by": "seeds.py",
    }, separators=(",", ":")).encode()
    unpacked = struct.pack("<I", len(writes)) + b"".join(
        struct.pack("<QI", offset, len(data)) + data for offset, data in writes)
    packed = lz4_literals(unpacked)
    return (b"\0OWSTAT1" + struct.pack("<I", len(header)) + header
            + struct.pack("<QQ", len(unpacked), len(packed)) + packed)


WAMR_X86_64_TAG = (
    "wamr 2.4.3 [bulk-memory reference-types call-indirect-overlong simd tail-call"
    " guard-pages stack-checks termination-checks]"
)


def wamr_payload(tag, aot):
    return b"OWWAMR01" + struct.pack("<H", len(tag)) + tag.encode() + aot


CODES = {
    "module": MODULE,
    "zip": zipped([("main.wasm", MODULE)]),
    "zip-two-modules": zipped([("a.wasm", MODULE), ("b.wasm", MODULE)]),
    "zip-no-module": zipped([("README", b"not a module"), ("dir/", b"")]),
    "envelope": envelope("wasmtime", b"\x7fELF" + bytes(60)),
    "envelope-signed": envelope("wasmer", b"payload", bytes(64)),
    "envelope-wamr": envelope("wamr", wamr_payload("wamr 2.4.3 [x]", b"\0aot" + bytes(12))),
    # The x86_64 profile and a CPU part, so that mutations reach the CPU check.
    "envelope-wamr-cpu": envelope("wamr", wamr_payload(WAMR_X86_64_TAG + " cpu x86-64-v2 +avx2 +bmi", b"\0aot")),
    "zip-envelope": zipped([("main.wasm", envelope("wasmtime", b"payload"))]),
    # Stored, as wasm-precompile --zip packs artifacts: read where it lies, after its CRC-32.
    "zip-stored-envelope": zipped(
        [("README", b"hi"), ("main.wasm", envelope("wasmtime", b"payload"))], zipfile.ZIP_STORED
    ),
    # A JavaScript or Python action pre-initialised ahead of time, bare and zipped.
    "state": state_file([(16, b"abc"), (70000, b"x" * 40)]),
    "zip-state": zipped([("action.snapshot", state_file([(0, b"hello")]))], zipfile.ZIP_STORED),
    "elf": b"\x7fELF\x02\x01\x01" + bytes(9),
    "text": b"(module)",
    "wat": b';; WebAssembly text\n(module (memory 1) (func (export "_start")))\n',
    "wasm-as-text": MODULE.decode("utf-8", errors="replace").encode(),
}


def write(target, name, data):
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"seed-{name}").write_bytes(data)


def main():
    for name, data in CODES.items():
        write("module_code", name, data)
    b64 = base64.b64encode
    write("request_body", "init", json.dumps({"value": {
        "name": "a", "main": "main", "binary": True, "code": b64(MODULE).decode(),
        "env": {"A": "1", "B": {"x": [1, 2]}},
        "annotations": {"dir": "/tmp/x", "net_access": "true"},
        "limits": {"memory": 256, "timeout": 60000, "logs": 10}}}).encode())
    write("request_body", "init-zip", json.dumps({"value": {
        "code": b64(CODES["zip"]).decode(), "annotations": {"net_access": 1}}}).encode())
    write("request_body", "init-envelope", json.dumps({"value": {
        "code": b64(CODES["envelope"]).decode()}}).encode())
    write("request_body", "init-text", json.dumps({"value": {
        "binary": False, "code": CODES["wat"].decode()}}).encode())
    write("request_body", "run", json.dumps({
        "value": {"n": 1, "s": "x"}, "namespace": "guest", "action_name": "a",
        "activation_id": "abc", "deadline": "1700000060000", "api_key": "k"}).encode())
    write("request_body", "run-numeric-deadline", b'{"value":[],"deadline":1700000060000}')
    # wasi_args takes arbitrary-derived input: a memory, then calls; raw bytes seed it.
    iovec = struct.pack("<IIII", 64, 16, 96, 8)
    clock = struct.pack("<QB7xI4xQQH6x", 7, 0, 1, 1_000_000, 0, 0)
    write("wasi_args", "memory-iovecs-clock", iovec + bytes(48) + clock + b"/tmp/x/file.txt")


if __name__ == "__main__":
    main()

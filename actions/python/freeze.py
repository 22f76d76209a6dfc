"""Freezes the Python engine's standard library and its OpenWhisk runtime into C.

    python3.11 freeze.py STDLIB_DIR OUT_DIR NAME=PATH...

Every module of the standard library that can work in WebAssembly (no threads, processes,
sockets or native extensions beyond the interpreter's own) is compiled to a code object and
marshalled into OUT_DIR/frozen.bin; OUT_DIR/frozen.h lists them as CPython's frozen modules
(`PyImport_FrozenModules`), so the engine imports them from its own data, with no file system.
Each NAME=PATH is frozen as the module NAME too (the engine's OpenWhisk runtime and helpers).
The output depends on the inputs only.
"""

import marshal
import os
import sys

if sys.version_info[:2] != (3, 11):
    sys.exit(f"freeze.py: needs Python 3.11 (the engine's bytecode), not {sys.version.split()[0]}")

# Top-level names of the standard library that are left out: tests and tools, GUIs, and what
# needs processes, threads, sockets with TLS or native libraries the engine does not have.
LEFT_OUT = {
    "__phello__", "__hello__", "_aix_support", "_bootsubprocess", "_osx_support", "_pydecimal",
    "_pyio", "antigravity", "bz2", "config-3.11-wasm32-wasi", "ctypes", "curses", "dbm",
    "distutils", "doctest", "ensurepip", "gzip", "idlelib", "lib-dynload", "lib2to3", "lzma",
    "msilib", "multiprocessing", "pdb", "pydoc", "pydoc_data", "site-packages",
    "sqlite3", "ssl", "tkinter", "test", "this", "turtle", "turtledemo", "unittest", "venv",
    "webbrowser", "idlelib", "__pycache__",
}
# Where the engine's standard library claims to live (file names in tracebacks).
PREFIX = "/usr/local/lib/python3.11"


def modules(stdlib):
    """(module name, path, is_package) of every module kept, in a stable order."""
    found = []
    for root, dirs, files in os.walk(stdlib):
        rel = os.path.relpath(root, stdlib)
        parts = [] if rel == "." else rel.split(os.sep)
        if parts and (parts[0] in LEFT_OUT or "tests" in parts or "test" in parts or "__pycache__" in parts):
            dirs[:] = []
            continue
        if parts and "__init__.py" not in files:
            dirs[:] = []
            continue
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            stem = name[:-3]
            if not parts and stem in LEFT_OUT:
                continue
            if stem == "__init__":
                if parts:
                    found.append((".".join(parts), os.path.join(root, name), True))
            else:
                found.append((".".join(parts + [stem]), os.path.join(root, name), False))
    return sorted(found)


def code_of(path, filename):
    with open(path, "rb") as f:
        source = f.read()
    return marshal.dumps(compile(source, filename, "exec", dont_inherit=True, optimize=0))


def main():
    stdlib, out = sys.argv[1:3]
    extra = [arg.split("=", 1) for arg in sys.argv[3:]]
    entries = []
    blob = bytearray()
    for name, path, package in modules(stdlib):
        filename = PREFIX + "/" + os.path.relpath(path, stdlib)
        try:
            data = code_of(path, filename)
        except SyntaxError as e:
            sys.exit(f"freeze.py: {path} does not compile: {e}")
        entries.append((name, len(blob), len(data), package))
        blob += data
    for name, path in extra:
        data = code_of(path, f"<{name}>")
        entries.append((name, len(blob), len(data), False))
        blob += data
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "frozen.bin"), "wb") as f:
        f.write(blob)
    with open(os.path.join(out, "frozen.h"), "w") as f:
        f.write("/* Written by actions/python/freeze.py: the engine's frozen modules. */\n")
        f.write("static const unsigned char ow_frozen_code[] = {\n#embed \"frozen.bin\"\n};\n")
        f.write("static const struct _frozen ow_frozen_modules[] = {\n")
        for name, offset, size, package in entries:
            f.write(f'    {{"{name}", ow_frozen_code + {offset}, {size}, {int(package)}, 0}},\n')
        f.write("    {0, 0, 0, 0, 0},\n};\n")
    print(f"freeze.py: {len(entries)} modules, {len(blob)} bytes of code", file=sys.stderr)


main()

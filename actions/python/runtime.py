"""OpenWhisk's python action contract in the executor's Python engine (frozen as `_openwhisk`).

`initialize(document)` runs once per action, inside pre-initialisation: it loads the action's
`__main__.py` (source text, or a zip's files with their packages and `virtualenv/`) as the
module `main__`, as OpenWhisk's python runtime does, and finds `main`; everything it leaves
is the action's snapshot. `run(params, env)` is one activation in an instance restored from
that snapshot. Each prints its report as the last stdout line (see launcher.c).

The action's files live in the engine's memory: modules import from them, and `open()` reads
them by relative path or below ACTION_ROOT; nothing else of the file system changes.
"""

import builtins
import io
import json
import os
import sys
import types
from importlib.machinery import ModuleSpec

# Imported where used, not here: what the engine imports at its start is in every action's
# state, and every activation restores it (`importlib.abc` alone brings 30 modules, from
# `tempfile` to `lzma`; `traceback` is for errors).

# Where the action's files appear to be (its `__file__`s); relative paths resolve here.
ACTION_ROOT = "/action"
# The standard library modules the engine leaves out, and why, for a clear ImportError.
UNAVAILABLE = {
    "ssl": "TLS",
    "_ssl": "TLS",
    "sqlite3": "SQLite",
    "_sqlite3": "SQLite",
    "ctypes": "native libraries",
    "_ctypes": "native libraries",
    "zlib": "zlib",
    "gzip": "zlib",
    "bz2": "bzip2",
    "lzma": "lzma",
    "multiprocessing": "processes",
    "tkinter": "a display",
    "curses": "a terminal",
}

_action = {}


def _report(value):
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()


class ActionFiles:
    """Imports modules and packages from the action's files (its zip root and the
    site-packages of its `virtualenv/`)."""

    def __init__(self, files, roots):
        self.files = files
        self.roots = roots

    def _locate(self, fullname):
        relative = fullname.replace(".", "/")
        for root in self.roots:
            for path, package in ((relative + "/__init__.py", True), (relative + ".py", False)):
                if root + path in self.files:
                    return root + path, package
        return None

    def find_spec(self, fullname, path=None, target=None):
        found = self._locate(fullname)
        if found is None:
            return None
        path, package = found
        spec = ModuleSpec(fullname, self, origin=ACTION_ROOT + "/" + path, is_package=package)
        if package:
            spec.submodule_search_locations = [ACTION_ROOT + "/" + path.rsplit("/", 1)[0]]
        spec.has_location = True
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        origin = module.__spec__.origin
        code = compile(self.files[origin[len(ACTION_ROOT) + 1 :]], origin, "exec", dont_inherit=True)
        exec(code, module.__dict__)

    def get_data(self, path):
        name = _action_path(path)
        if name not in self.files:
            raise FileNotFoundError(path)
        return self.files[name].encode()

    def get_source(self, fullname):
        found = self._locate(fullname)
        return None if found is None else self.files[found[0]]


class Unavailable:
    """Last on the path: an import of a module the engine cannot have says why."""

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".", 1)[0]
        if top in UNAVAILABLE:
            raise ModuleNotFoundError(
                f"No module named '{fullname}': the executor's Python runs in WebAssembly, "
                f"without {UNAVAILABLE[top]}",
                name=fullname,
            )
        return None


def _action_path(path):
    """The action file `path` names (relative, or below ACTION_ROOT), or None."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if path.startswith(ACTION_ROOT + "/"):
        path = path[len(ACTION_ROOT) + 1 :]
    elif path.startswith("/"):
        return None
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


_real_open = builtins.open


def _open(file, mode="r", *args, **kwargs):
    """`open()` that reads the action's own files (read-only) before the file system."""
    if isinstance(file, (str, bytes, os.PathLike)) and not set(mode) & set("wax+"):
        name = _action_path(file)
        files = _action.get("files", {})
        if name is not None and name in files:
            data = files[name].encode()
            if "b" in mode:
                return io.BytesIO(data)
            encoding = kwargs.get("encoding") or (args[1] if len(args) > 1 else None)
            return io.TextIOWrapper(io.BytesIO(data), encoding=encoding or "utf-8", newline=kwargs.get("newline"))
    return _real_open(file, mode, *args, **kwargs)


def _virtualenv_roots(files):
    """The site-packages of the action's `virtualenv/`, as OpenWhisk's runtime activates it."""
    if not any(name.startswith("virtualenv/") for name in files):
        return []
    if "virtualenv/bin/activate_this.py" not in files and "virtualenv/Scripts/activate_this.py" not in files:
        raise ImportError("Invalid virtualenv. Zip file does not include 'activate_this.py'.")
    roots = sorted(
        {
            name[: name.index("/site-packages/") + len("/site-packages/")]
            for name in files
            if name.startswith("virtualenv/") and "/site-packages/" in name
        }
    )
    return roots


def _set_environment(env):
    os.environ.clear()
    os.environ.update(env)


def _print_traceback(error):
    """The traceback of `error` on stderr, from the action's code on (not this module's)."""
    import traceback

    traceback.print_exception(type(error), error, error.__traceback__.tb_next)


def initialize(document):
    """Loads the action of the init `document` and finds its `main`; prints the report."""
    try:
        doc = json.loads(document)
        main_name = doc.get("main") or "main"
        if not main_name.isidentifier():
            _report({"error": f"Cannot start action: the entry point '{main_name}' is not a Python function name"})
            return
        files = doc.get("files")
        if files is None:
            files = {"__main__.py": doc.get("code", "")}
        elif "__main__.py" not in files:
            _report({"error": "Cannot start action: Zip file does not include __main__.py"})
            return
        _set_environment(doc.get("env") or {})
        _action["files"] = files
        roots = [""] + _virtualenv_roots(files)
    except ImportError as e:
        _report({"error": f"Cannot start action: {e}"})
        return
    sys.meta_path.insert(0, ActionFiles(files, roots))
    sys.meta_path.append(Unavailable())
    builtins.open = _open
    io.open = _open
    sys.argv = ["exec__.py"]
    module = types.ModuleType("main__")
    module.__file__ = ACTION_ROOT + "/__main__.py"
    sys.modules["main__"] = module
    try:
        code = compile(files["__main__.py"], module.__file__, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SystemExit as e:
        _report({"error": f"Cannot start action: the action exited during initialization (status {e.code})"})
        return
    except BaseException as e:
        _print_traceback(e)
        import traceback

        message = "".join(traceback.format_exception_only(type(e), e)).strip()
        _report({"error": f"Cannot start action: {message}"})
        return
    main = module.__dict__.get(main_name)
    if not callable(main):
        _report({"error": f"Cannot start action: __main__.py has no function '{main_name}'"})
        return
    _action["main"] = main
    _report({"ok": True})


def run(params, env):
    """One activation: `main(params)`; returns the exit status (0: result, 1: error)."""
    _set_environment(env)
    if "random" in sys.modules:
        # The snapshot holds the generator's state: each activation draws its own seed.
        sys.modules["random"].seed()
    main = _action.get("main")
    if main is None:
        _report({"error": "the Python engine runs actions after their initialization only"})
        return 1
    try:
        args = json.loads(params) if params.strip() else {}
    except ValueError as e:
        _report({"error": f"the parameters are not JSON: {e}"})
        return 1
    try:
        result = main(args)
    except SystemExit:
        _report({"error": "command exited"})
        return 1
    except Exception as e:
        _print_traceback(e)
        result = {"error": str(e)}
    if not isinstance(result, (dict, list, tuple)):
        _report({"error": "The action did not return a dictionary or array."})
        return 1
    try:
        line = json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        _report({"error": f"The action did not return JSON: {e}"})
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 0

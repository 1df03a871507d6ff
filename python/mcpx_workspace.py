# mcpx_workspace.py - a workspace's Python variables, restored before the
# code runs and saved after it (docs/tool.md, "Workspaces").
#
# Trusted code, embedded in the server binary like runner.py, run inside
# the run's sandbox: this is the only place a workspace's variables are
# unpickled. The server never parses what is written here; it stores the
# bytes of .mcpx/vars.out and reads only the names in .mcpx/names.
#
# The runner calls restore() when the server wrote .mcpx/vars.in (a
# header line with the byte limit, then the previous call's blob, maybe
# empty), and save() once the run has ended the way Python ends (also after
# an exception or SystemExit): a killed run never gets here, and the server
# keeps the previous variables for it.
#
# What is kept: every global whose name is an identifier and not a
# dunder, each pickled on its own (one bad value loses only itself; two
# names for one object come back as two objects). Modules are kept by
# name and imported again; functions defined by the run's code are kept
# by their code (marshal), their globals being the next run's. Classes
# defined by the run's code are not kept, nor objects of them: their
# definition is code to run again (or a module in the workspace, whose
# directory is on sys.path). A value pickle refuses (an open file, a
# socket, a generator, a lock) or that does not fit in what is left of
# the limit is named as not kept. A variable that cannot be restored (its
# module is gone, its class changed) is reported on stderr and its bytes
# are kept as they were, unless the run assigns the name.
#
# Blob format (this module's own): b"MCPXVARS1\n", then per variable a
# 2-byte name length, the UTF-8 name, an 8-byte pickle length (big-endian)
# and the pickle.
import io
import marshal
import os
import pickle
import sys
import types

_MAGIC = b"MCPXVARS1\n"
_HEADER = b"mcpx-vars 1 "


class _TooBig(Exception):
    pass


class _Capped:
    """A write-only view of f that refuses to pass limit bytes."""

    def __init__(self, f, limit):
        self.f, self.left = f, limit

    def write(self, b):
        # Protocol 5 hands large buffers over as PickleBuffer objects,
        # which have no len(): their size is their memoryview's.
        n = memoryview(b).nbytes
        if n > self.left:
            raise _TooBig()
        self.left -= n
        return self.f.write(b)


def _fn(code, name, qualname, defaults, kwdefaults, cells, attrs, doc):
    import __main__

    closure = None
    if cells is not None:
        closure = tuple(types.CellType(v) if v is not _EMPTY else types.CellType() for v in cells)
    f = types.FunctionType(marshal.loads(code), __main__.__dict__, name, defaults, closure)
    f.__qualname__, f.__kwdefaults__, f.__doc__ = qualname, kwdefaults, doc
    if attrs:
        f.__dict__.update(attrs)
    return f


class _Empty:
    def __reduce__(self):
        return "_EMPTY"


_EMPTY = _Empty()


def _cell(c):
    try:
        return c.cell_contents
    except ValueError:
        return _EMPTY


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, types.ModuleType):
            name = getattr(obj, "__name__", None)
            if not isinstance(name, str) or name == "__main__" or sys.modules.get(name) is not obj:
                raise pickle.PicklingError("a module that is not importable by its name")
            return __import__("importlib").import_module, (name,)
        if isinstance(obj, type) and getattr(obj, "__module__", None) == "__main__":
            raise pickle.PicklingError("a class defined by the run's code")
        if type(obj) is types.FunctionType and obj.__module__ == "__main__":
            cells = None if obj.__closure__ is None else [_cell(c) for c in obj.__closure__]
            return _fn, (
                marshal.dumps(obj.__code__),
                obj.__name__,
                obj.__qualname__,
                obj.__defaults__,
                obj.__kwdefaults__,
                cells,
                obj.__dict__ or None,
                obj.__doc__,
            )
        return NotImplemented


def _records(f):
    """(name, offset, length) of each variable in the blob open at f."""
    if f.read(len(_MAGIC)) != _MAGIC:
        return
    while True:
        h = f.read(2)
        if len(h) < 2:
            return
        name = f.read(int.from_bytes(h, "big")).decode("utf-8", "replace")
        n = int.from_bytes(f.read(8), "big")
        at = f.tell()
        yield name, at, n
        f.seek(at + n)


def restore(wd, g):
    """Defines the saved variables in g from wd/.mcpx/vars.in (then
    removed); returns the state save() needs."""
    path = os.path.join(wd, ".mcpx", "vars.in")
    st = {"limit": 0, "raw": {}, "dir": wd}
    with open(path, "rb") as f:
        line = f.readline(64)
        if line.startswith(_HEADER):
            st["limit"] = int(line[len(_HEADER) :])
        for name, at, n in _records(f):
            try:
                g[name] = pickle.Unpickler(f).load()
            except Exception as e:
                f.seek(at)
                st["raw"][name] = f.read(n)
                print(
                    "mcp-exec: workspace variable %r not restored (%s: %s); kept as it was "
                    "unless this run assigns it" % (name, type(e).__name__, e),
                    file=sys.stderr,
                )
    # The code finds its workdir as it left it: no trace of the server's.
    os.unlink(path)
    try:
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass
    return st


def _write(f, name, blob=None, value=None, left=0):
    """One record: blob as it is, or value pickled; False when it did not fit."""
    at = f.tell()
    nb = name.encode("utf-8")
    f.write(len(nb).to_bytes(2, "big") + nb + bytes(8))
    start = f.tell()
    try:
        if blob is not None:
            _Capped(f, left - (start - at)).write(blob)
        else:
            _Pickler(_Capped(f, left - (start - at)), pickle.HIGHEST_PROTOCOL).dump(value)
    except BaseException:
        f.seek(at)
        f.truncate()
        return False
    end = f.tell()
    f.seek(start - 8)
    f.write((end - start).to_bytes(8, "big"))
    f.seek(end)
    return end - at


def save(st, g):
    """Writes the variables of g to .mcpx/vars.out and their names to
    .mcpx/names: the server takes both once the run has ended."""
    d = os.path.join(st["dir"], ".mcpx")
    os.makedirs(d, exist_ok=True)
    kept, lost = [], []
    left = st["limit"] - len(_MAGIC)
    tmp = os.path.join(d, "vars.tmp")
    with open(tmp, "w+b") as f:
        f.write(_MAGIC)
        names = [k for k in list(g) if isinstance(k, str) and k.isidentifier()]
        for k in names:
            if k.startswith("__") and k.endswith("__"):
                continue
            n = left > 0 and _write(f, k, value=g[k], left=left)
            (kept if n else lost).append(k)
            left -= n or 0
        for k, blob in st["raw"].items():
            if k not in g:
                n = left > 0 and _write(f, k, blob=blob, left=left)
                (kept if n else lost).append(k)
                left -= n or 0
    with open(os.path.join(d, "names"), "w", encoding="utf-8") as f:
        f.write("".join("+%s\n" % k for k in kept) + "".join("-%s\n" % k for k in lost))
    os.replace(tmp, os.path.join(d, "vars.out"))

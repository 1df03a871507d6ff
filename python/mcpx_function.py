# mcpx_function.py - the trusted wrapper a callable function's run goes through.
#
# Shipped inside the server binary like mcpx (runner.py) and used only by a
# function's run, whose main.py is the server's fixed line
# `import mcpx_function; mcpx_function.main()` (src/codemode/functions.c). The
# server writes one JSON object to the run's stdin: {"name", "file",
# "source", "args"}; the arguments were validated against the function's
# input schema on the host before the run was even prepared.
#
# main() compiles the source under its file's name (so tracebacks show the
# admin's file and lines), runs it as a fresh module, calls
# handler(args, ctx), and sends the outcome to the server as one "result"
# op on the run's broker channel (mcpx.py), never on stdout, which the
# function's own prints share:
#
#   {"op": "result", "status": "ok"}          body: the return value, JSON
#   {"op": "result", "status": "error"}       body: {"message", "traceback"}
#   {"op": "result", "status": "bad_result"}  body: {"message"} (not JSON)
#
# Once the server has answered, the run ends at once (os._exit): threads
# the function left behind do not delay the call's result.
"""Runs an admin-defined function: handler(args, ctx) -> result."""

import json as _json
import linecache as _linecache
import os as _os
import sys as _sys
import traceback as _traceback
import types as _types

import mcpx as _mcpx

__all__ = ["Context", "main"]


class Context:
    """What a function gets besides its arguments.

    ctx.fetch(url, ...) is mcpx.fetch, which reaches exactly the egress
    rules the policy names for this function (with their credentials, added
    by the server); ctx.call(name, **args) is mcpx.call; ctx.name is the
    function's name.
    """

    def __init__(self, name):
        self.name = name

    @staticmethod
    def fetch(url, **kwargs):
        return _mcpx.fetch(url, **kwargs)

    @staticmethod
    def call(name, /, **args):
        return _mcpx.call(name, **args)

    def __repr__(self):
        return "<mcpx_function.Context %s>" % self.name


def _traceback_from(exc, filename):
    """The traceback from the first frame in the function's own file: the
    wrapper's frames are not the admin's business."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    if tb is None:
        return ""
    return "".join(_traceback.format_exception(type(exc), exc, tb))


def _run(name, filename, source, args):
    """Returns (status, body) for the server."""
    _linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = _types.ModuleType("mcpx_function_source")
    module.__file__ = filename
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        exec(code, module.__dict__)
        handler = module.__dict__.get("handler")
        if not callable(handler):
            raise TypeError("%s defines no function handler(args, ctx)" % filename)
        value = handler(args, Context(name))
    except BaseException as e:
        message = "".join(_traceback.format_exception_only(type(e), e)).strip()
        return "error", {"message": message, "traceback": _traceback_from(e, filename)}
    try:
        return "ok", _json.dumps(value, allow_nan=False, ensure_ascii=False).encode()
    except (TypeError, ValueError) as e:
        return "bad_result", {"message": "the function's return value is not JSON: %s" % e}


def main():
    inv = _json.loads(_sys.stdin.buffer.read())
    status, body = _run(inv["name"], inv["file"], inv["source"], inv["args"])
    if not isinstance(body, bytes):
        body = _json.dumps(body).encode()
    _mcpx._get_channel().request({"op": "result", "status": status}, body)
    for s in (_sys.stdout, _sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass
    _os._exit(0)

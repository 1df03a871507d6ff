# mcpx.py - what run code may reach beyond its sandbox, through the server.
#
# Shipped inside the server binary and importable in every run as `mcpx`
# (runner.py). Standard library only. A run has no network socket of its
# own: mcpx.fetch() asks the server over the run's channel (an inherited
# socket; MCPX_CHANNEL_FD names its fd), and the server checks the request
# against its policy, performs it, adds credentials the run never sees, and
# sends the response back. Frames on the channel: u32 JSON length, u32 body
# length (big-endian), the JSON object, the raw body (src/codemode/broker_wire.c).
#
# Thread-safe: threads of the run may fetch at once (up to the policy's
# max_in_flight); one of them reads the channel at a time and hands each
# answer to the thread that waits for its id. A forked child cannot share
# the channel with its parent, so it gets a clear error instead.
#
# mcpx.call(name, **args) calls one of the policy's functions that code may
# call (callable_from_exec) over the same channel: the server validates the
# arguments, runs the function in a sandbox of its own beside this run, and
# sends back its structured result or its error (src/codemode/functions.c).
#
# mcpx.call("<upstream>.<tool>", **args) calls a tool of another MCP server
# the policy names ("upstreams"): the server is the MCP client, adds the
# upstream's credential, checks and caps the call, and sends back the
# tool's structuredContent, or the text of its text blocks joined with
# newlines; mcpx.call_raw returns the whole CallToolResult. mcpx.tools()
# and mcpx.describe() list what this run may call; `from mcpx.servers
# import github` gives the upstream's tools as Python functions
# (src/codemode/upstream_ops.c).
"""Reach what the server's policy allows: mcpx.fetch(url, ...),
mcpx.call(function or "upstream.tool", **args), mcpx.call_raw,
mcpx.tools(query), mcpx.describe(name), and `from mcpx.servers import x`."""

import json as _json
import os as _os
import stat as _stat
import struct as _struct
import threading as _threading

import sys as _sys
import types as _types

__all__ = ["fetch", "call", "call_raw", "tools", "describe", "servers", "Response", "Denied",
           "FetchError", "ToolError"]

_MAX_JSON = 1 << 20
_MAX_BODY = 1 << 30


class Denied(PermissionError):
    """The server's policy refused the request; .reason says which check."""

    def __init__(self, message, reason="denied"):
        super().__init__(message)
        self.reason = reason


class FetchError(OSError):
    """The request was allowed but did not get a response (DNS, connect,
    TLS, timeout), or the channel to the server failed."""


class ToolError(Exception):
    """mcpx.call: the function could not be called, or it failed; the
    message is the tool's error text (for an exception in the function: its
    message and traceback)."""


class Response:
    """status (int), headers (dict, lower-case names), content (bytes),
    url (after redirects); text and json() decode the content."""

    def __init__(self, status, headers, content, url):
        self.status = status
        self.headers = headers
        self.content = content
        self.url = url

    @property
    def ok(self):
        return 200 <= self.status < 400

    @property
    def text(self):
        charset = "utf-8"
        for part in self.headers.get("content-type", "").split(";")[1:]:
            k, _, v = part.strip().partition("=")
            if k.lower() == "charset" and v:
                charset = v.strip('"')
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    def json(self):
        return _json.loads(self.content)

    def __repr__(self):
        return "<mcpx.Response [%d] %s>" % (self.status, self.url)


def _read_exact(fd, n):
    parts = []
    while n:
        chunk = _os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise FetchError("the channel to the server closed")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


class _Channel:
    def __init__(self, fd):
        self.fd = fd
        self.pid = _os.getpid()
        self.send_lock = _threading.Lock()
        self.cond = _threading.Condition(_threading.Lock())
        self.answers = {}
        self.reading = False
        self.broken = None
        self.next_id = 1

    def _read_frame(self):
        jlen, blen = _struct.unpack(">II", _read_exact(self.fd, 8))
        if not 0 < jlen <= _MAX_JSON or blen > _MAX_BODY:
            raise FetchError("the server sent a malformed frame")
        msg = _json.loads(_read_exact(self.fd, jlen))
        return msg, _read_exact(self.fd, blen) if blen else b""

    def _send(self, msg, body):
        data = _json.dumps(msg).encode()
        frame = _struct.pack(">II", len(data), len(body)) + data + body
        view = memoryview(frame)
        with self.send_lock:
            while view:
                n = _os.write(self.fd, view)
                view = view[n:]

    def request(self, msg, body):
        if _os.getpid() != self.pid:
            raise FetchError("mcpx.fetch works in the run's own process, not in a forked "
                             "child (use threads)")
        with self.cond:
            rid = self.next_id
            self.next_id += 1
        msg["id"] = rid
        try:
            self._send(msg, body)
        except OSError as e:
            raise FetchError("cannot reach the server: %s" % e) from None
        with self.cond:
            while rid not in self.answers:
                if self.broken:
                    raise FetchError(self.broken)
                if self.reading:
                    self.cond.wait()
                    continue
                self.reading = True
                self.cond.release()
                try:
                    got, err = self._read_frame(), None
                except (OSError, ValueError) as e:
                    got, err = None, e
                finally:
                    self.cond.acquire()
                    self.reading = False
                    self.cond.notify_all()
                if err is not None:
                    self.broken = "the channel to the server failed: %s" % err
                elif not isinstance(got[0], dict) or "id" not in got[0]:
                    self.broken = "the server sent an answer without an id"
                else:
                    self.answers[got[0]["id"]] = got
            return self.answers.pop(rid)


_channel = None
_channel_lock = _threading.Lock()


def _get_channel():
    global _channel
    with _channel_lock:
        if _channel is None:
            fd = _os.environ.get("MCPX_CHANNEL_FD", "")
            try:
                fd = int(fd)
                ok = _stat.S_ISSOCK(_os.fstat(fd).st_mode)
            except (ValueError, OSError):
                ok = False
            if not ok:
                raise Denied("no egress is configured for this run", "not_configured")
            _channel = _Channel(fd)
        return _channel


def _check_str(name, value):
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (name, type(value).__name__))


def fetch(url, method="GET", headers=None, data=None, json=None, timeout=None):
    """Makes an HTTP(S) request through the server and returns a Response.

    Only URLs the server's policy allows can be reached; anything else
    raises Denied (a PermissionError) naming the reason. A network failure
    raises FetchError (an OSError). data is bytes or str (sent as UTF-8);
    json is serialised, with Content-Type application/json unless headers
    set one. timeout (seconds) can only shorten the policy's own limit.
    """
    _check_str("url", url)
    _check_str("method", method)
    if data is not None and json is not None:
        raise ValueError("pass data or json, not both")
    hdrs = []
    for k, v in (headers or {}).items():
        _check_str("a header name", k)
        _check_str("the value of header %s" % k, v)
        hdrs.append([k, v])
    if json is not None:
        data = _json.dumps(json).encode()
        if not any(k.lower() == "content-type" for k, _ in hdrs):
            hdrs.append(["Content-Type", "application/json"])
    if isinstance(data, str):
        data = data.encode()
    if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("data must be bytes or str, not %s" % type(data).__name__)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise ValueError("timeout must be a positive number of seconds")
    msg = {"op": "fetch", "url": url, "method": method.upper(), "headers": hdrs}
    if timeout is not None:
        msg["timeout"] = float(timeout)
    answer, body = _get_channel().request(msg, bytes(data) if data is not None else b"")
    error = answer.get("error")
    if error == "denied":
        raise Denied(answer.get("message", "refused"), answer.get("reason", "denied"))
    if error:
        raise FetchError(answer.get("message", "the request failed"))
    merged = {}
    for k, v in answer.get("headers", []):
        merged[k] = merged[k] + ", " + v if k in merged else v
    return Response(answer.get("status", 0), merged, body, answer.get("url", url))


_NOT_UPSTREAM = object()


def _upstream(name, args, raw):
    """One call of an upstream's tool; _NOT_UPSTREAM when name names no
    upstream (it may be a function's)."""
    try:
        body = _json.dumps(args, allow_nan=False).encode()
    except (TypeError, ValueError) as e:
        raise TypeError("mcpx.call: the arguments must be JSON values: %s" % e) from None
    try:
        channel = _get_channel()
    except Denied:
        return _NOT_UPSTREAM
    try:
        answer, result = channel.request({"op": "upstream", "name": name, "raw": raw}, body)
    except FetchError as e:
        raise ToolError(str(e)) from None
    error = answer.get("error")
    if error == "not_upstream":
        return _NOT_UPSTREAM
    if error == "denied":
        raise Denied(answer.get("message", "refused"), answer.get("reason", "denied"))
    if error:
        raise ToolError(answer.get("message", "the call failed"))
    return _json.loads(result)


def call_raw(name, /, **args):
    """Calls the tool "<upstream>.<tool>" and returns its whole
    CallToolResult as a dict (content blocks, images and resources
    included, structuredContent, isError), without raising on isError.

    Raises Denied when the call is refused (not allowed, budget spent,
    upstream down, answer too large) and ToolError on a protocol error or a
    timeout.
    """
    _check_str("name", name)
    got = _upstream(name, args, True)
    if got is _NOT_UPSTREAM:
        raise Denied("%s names no upstream tool this run may call" % name, "not_allowed")
    return got


def call(name, /, **args):
    """Calls the function `name` of the server's policy, or the tool
    "<upstream>.<tool>" of an upstream MCP server, with keyword arguments.

    An upstream's tool returns its structuredContent when it has one, else
    the text of its text blocks joined with newlines; a tool error raises
    ToolError with the tool's message, a refused call (not allowed, budget
    spent, upstream down) raises Denied with the reason.

    A function returns its structured result (a dict: what the function
    returned, or {"result": value} when that was not a dict).

    Raises ToolError with the tool's error text when the call is refused
    (unknown function, invalid arguments, nesting too deep) or the function
    fails. The call runs in a sandbox of its own, under the function's own
    egress rules, and ends when this run ends.
    """
    _check_str("name", name)
    if "." in name:
        got = _upstream(name, args, False)
        if got is not _NOT_UPSTREAM:
            return got
    try:
        body = _json.dumps(args, allow_nan=False).encode()
    except (TypeError, ValueError) as e:
        raise TypeError("mcpx.call: the arguments must be JSON values: %s" % e) from None
    try:
        channel = _get_channel()
    except Denied:
        raise ToolError("no function can be called from this run: the server's policy lets "
                        "code call none") from None
    try:
        answer, result = channel.request({"op": "call", "name": name}, body)
    except FetchError as e:
        raise ToolError(str(e)) from None
    if answer.get("error"):
        raise ToolError(answer.get("message", "the call failed"))
    return _json.loads(result)


def tools(query=None):
    """What this run may call: a list of {"name", "description",
    "input_schema", "output_schema"} (upstreams' tools as
    "<upstream>.<tool>", and functions), those whose name or description
    contains query (case-insensitive) when given. Upstreams that are down
    contribute nothing."""
    if query is not None:
        _check_str("query", query)
    try:
        channel = _get_channel()
    except Denied:
        return []
    answer, body = channel.request({"op": "upstream_tools"}, b"")
    if answer.get("error"):
        raise ToolError(answer.get("message", "the tool list is not available"))
    found = _json.loads(body)
    if query:
        q = query.lower()
        found = [t for t in found
                 if q in t.get("name", "").lower() or q in (t.get("description") or "").lower()]
    return found


def describe(name):
    """The entry of mcpx.tools() named name; LookupError when there is none."""
    _check_str("name", name)
    for t in tools():
        if t.get("name") == name:
            return t
    raise LookupError("no tool named %s may be called from this run" % name)


_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
             "array": "list", "object": "dict"}


def _stub(full, entry):
    schema = entry.get("input_schema") or {}
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])

    def tool(**kwargs):
        return call(full, **kwargs)

    params = []
    for k, v in props.items():
        t = _PY_TYPES.get((v or {}).get("type"), "Any") if isinstance(v, dict) else "Any"
        params.append("%s: %s%s" % (k, t, "" if k in required else " = ..."))
    lines = [entry.get("description") or "", "", "%s(%s)" % (full, ", ".join(params))]
    for k, v in props.items():
        if isinstance(v, dict) and v.get("description"):
            lines.append("  %s: %s" % (k, v["description"]))
    tool.__name__ = tool.__qualname__ = full.split(".", 1)[1]
    tool.__doc__ = "\n".join(lines).strip()
    try:
        import inspect
        tool.__signature__ = inspect.Signature(
            [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY,
                               default=inspect.Parameter.empty if k in required else None)
             for k in props if k.isidentifier()])
    except (ImportError, ValueError, TypeError):
        pass
    return tool


class _Servers(_types.ModuleType):
    """`from mcpx.servers import github`: one module per upstream, whose
    attributes are its tools as functions with keyword arguments."""

    def __getattr__(self, upstream):
        if upstream.startswith("__"):
            raise AttributeError(upstream)
        import keyword as _keyword  # here, not at start-up: only stubs need them
        import re as _re

        prefix = upstream + "."
        mod = _types.ModuleType("mcpx.servers." + upstream,
                                "The tools of upstream MCP server %s." % upstream)
        found = False
        entries = [e for e in tools() if e.get("name", "").startswith(prefix)]
        # Tool names that are identifiers first, so that "get_sum" keeps its
        # name when "get-sum" exists too; then names like "get-sum" (common
        # in MCP servers) as get_sum, every character an identifier may not
        # hold replaced by "_". mcpx.call takes any name.
        entries.sort(key=lambda e: not e["name"][len(prefix):].isidentifier())
        for entry in entries:
            attr = _re.sub(r"\W", "_", entry["name"][len(prefix):], flags=_re.ASCII)
            if attr.isidentifier() and not _keyword.iskeyword(attr) and \
                    not hasattr(mod, attr):
                setattr(mod, attr, _stub(entry["name"], entry))
                found = True
        if not found:
            raise AttributeError("no upstream named %s may be called from this run (or it is "
                                 "down)" % upstream)
        return mod


servers = _Servers("mcpx.servers", "The upstream MCP servers this run may call.")
_sys.modules.setdefault("mcpx.servers", servers)

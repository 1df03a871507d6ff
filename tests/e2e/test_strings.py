"""End-to-end: bytes inside JSON strings, over stdio and Streamable HTTP.
stdin reaches the program byte-exact, U+0000 included; code containing U+0000
is a clear tool error; an id with U+0000 is echoed exactly; raw control
characters inside a string are a parse error (-32700, RFC 8259 section 7)."""
from mcpx_harness import Failures, HttpServer, McpHttpClient, StdioServer, structured, tool_error_text

t = Failures()

# Every byte value the JSON escapes can carry below U+0080, NULs among them,
# and a multi-byte character after a NUL.
STDIN = "".join(chr(i) for i in range(0x80)) + "\x00\u00e9\x00\x00end"
ECHO = "import sys\nb = sys.stdin.buffer.read()\nprint(len(b), b.hex())"
WANT = f"{len(STDIN.encode())} {STDIN.encode().hex()}\n"

s = StdioServer()
s.initialize()
r = s.call(ECHO, stdin=STDIN)
sc = structured(r)
t.check(sc and sc["stdout"] == WANT, "stdio: stdin with NULs reaches the program byte-exact",
        sc and sc["stdout"][:120])

r = s.call("print('a')\x00import os")
msg = tool_error_text(r)
t.check(msg is not None and "NUL" in msg, "stdio: code containing U+0000 is a tool error", r)

s.send(b'{"jsonrpc":"2.0","id":"a\\u0000b","method":"ping"}')
r = s.recv(10)
t.check(r and r.get("id") == "a\x00b" and r.get("result") == {}, "stdio: an id with U+0000 is echoed exactly", r)

s.send(b'{"jsonrpc":"2.0","id":5,"method":"ping\\u0000"}')
r = s.recv(10)
t.check(r and r.get("error", {}).get("code") == -32601, "stdio: \"ping\\u0000\" is not ping", r)

for raw, what in ((b'{"jsonrpc":"2.0","id":"a\tb","method":"ping"}', "a raw tab"),
                  (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\x01"}}', "a raw U+0001"),
                  (b'{"jsonrpc":"2.0","id":1,"method":"pi\x00ng"}', "a raw NUL byte")):
    s.send(raw)
    r = s.recv(10)
    t.check(r and r.get("id") is None and r.get("error", {}).get("code") == -32700,
            f"stdio: {what} inside a string is a parse error", r)
r = s.request("ping")
t.check(r and r.get("result") == {}, "stdio: the server keeps going", r)
s.close()

srv = HttpServer()
c = McpHttpClient(srv)
c.initialize()
st, h, body = c.call(ECHO, stdin=STDIN)
sc = structured(body)
t.check(st == 200 and sc and sc["stdout"] == WANT, "http: stdin with NULs reaches the program byte-exact",
        sc and sc["stdout"][:120])
st, h, raw = srv.request("POST", "/mcp", b'{"jsonrpc":"2.0","id":"x","method":"ping","params":{"a":"\x1f"}}',
                         c.headers())
t.check(st == 400 and b"-32700" in raw, "http: a raw control character is -32700 with 400", (st, raw))
srv.stop()
t.done()

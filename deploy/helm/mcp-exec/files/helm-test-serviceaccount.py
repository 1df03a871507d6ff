"""helm test, identity.kubernetes.enabled: a client pod calls the server
through the Service with its projected ServiceAccount token (audience
identity.kubernetes.audience, expirationSeconds 3600) as
Authorization: Bearer, as a client in the cluster would: initialize, then
tools/call exec print(6*7) must answer 42; a token that is not one must be
refused with 401. Standard library only (the image's python3, no shell).

Environment: MCP_URL (the Service's /mcp URL), SA_TOKEN_FILE (the projected
token)."""
import json
import os
import sys
import urllib.error
import urllib.request

URL = os.environ["MCP_URL"]
TOKEN_FILE = os.environ.get("SA_TOKEN_FILE", "/var/run/secrets/mcp-exec-client/token")
results = []


def check(ok, what, detail=""):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + what + (f" ({detail})" if detail and not ok else ""))
    return ok


def post(token, msg, sid=None):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": "Bearer " + token, "MCP-Protocol-Version": "2025-11-25"}
    if sid:
        h["Mcp-Session-Id"] = sid
    req = urllib.request.Request(URL, json.dumps(msg).encode(), h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.headers.get("Mcp-Session-Id"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, None, e.read()


def main():
    with open(TOKEN_FILE) as f:
        token = f.read().strip()
    st, _, body = post(token + "x", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    check(st == 401, "a token that is not one is refused (401)", f"{st} {body[:200]!r}")
    st, sid, body = post(token, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "helm-test-serviceaccount", "version": "1"}}})
    if not check(st == 200 and sid, "the projected ServiceAccount token is admitted",
                 f"{st} {body[:200]!r}"):
        return 1
    post(token, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    st, _, body = post(token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "exec", "arguments": {"code": "print(6*7)"}}}, sid)
    text = body.decode(errors="replace")
    check(st == 200 and "42" in text, "exec print(6*7) -> 42 as the ServiceAccount",
          f"{st} {text[:300]}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

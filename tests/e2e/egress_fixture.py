"""What the egress broker tests talk to: local HTTP(S) upstreams on 127.0.0.1
with the endpoints the tests need, a test CA and server certificates made with
openssl at test time, and policy files written the way kubelet updates them
(a new file renamed over the old one).

The upstreams record what reached them (method, path, headers, body) and
signal events (a request is hanging, a client went away) through a
condition variable, so tests wait on events, never on time.
"""
import http.server
import json
import os
import select
import socket
import ssl
import subprocess
import threading
import urllib.parse

import mcpx_harness


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # clients the broker cut off (cancelled runs) are expected


class Upstream:
    """A threading HTTP server on 127.0.0.1, optionally TLS.

    /echo            answers method, path, body and the request's headers
                     (except X-Key, the credential: only whether it came)
    /big?n=N         N bytes
    /redirect?to=U   302 to U;  /loop  redirects to itself
    /status?code=N   an empty answer with status N
    /headers         extra response headers (two Set-Cookie)
    /hang            waits until release() or until the client goes away
    http://...       (a proxy request) answers {"proxied": the URL}
    """

    def __init__(self, tls_ctx=None):
        self.seen = []
        self.cond = threading.Condition()
        self.hanging = 0
        self.disconnects = 0
        # Per /hang?tag=...: hanging and gone, so that a test can count one
        # run's requests without a previous run's arriving late.
        self.hanging_tag = {}
        self.disconnects_tag = {}
        self._release_r, self._release_w = os.pipe()
        os.set_blocking(self._release_r, False)
        self.httpd = _Server(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        if tls_ctx is not None:
            self.httpd.socket = tls_ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait(self, pred, timeout=60):
        with self.cond:
            return self.cond.wait_for(pred, timeout)

    def last(self, path_prefix):
        with self.cond:
            for rec in reversed(self.seen):
                if rec["path"].startswith(path_prefix):
                    return rec
        return None

    def release(self):
        """Lets every hanging request answer (until rearm())."""
        os.write(self._release_w, b"x")

    def rearm(self):
        try:
            while os.read(self._release_r, 4096):
                pass
        except BlockingIOError:
            pass


def _handler(up):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _answer(self, status, body=b"", ctype="application/json", extra=()):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _record(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            rec = {"method": self.command, "path": self.path, "body": body,
                   "headers": {k.lower(): v for k, v in self.headers.items()}}
            with up.cond:
                up.seen.append(rec)
                up.cond.notify_all()
            return rec

        def _hang(self, tag=None):
            with up.cond:
                up.hanging += 1
                if tag:
                    up.hanging_tag[tag] = up.hanging_tag.get(tag, 0) + 1
                up.cond.notify_all()
            r, _, _ = select.select([self.connection, up._release_r], [], [], 120)
            gone = self.connection in r and not self.connection.recv(1, socket.MSG_PEEK)
            with up.cond:
                up.hanging -= 1
                up.disconnects += gone
                if tag:
                    up.hanging_tag[tag] -= 1
                    up.disconnects_tag[tag] = up.disconnects_tag.get(tag, 0) + gone
                up.cond.notify_all()
            if not gone:
                self._answer(200, b"released", "text/plain")

        def _route(self):
            rec = self._record()
            if self.path.startswith("http://"):
                # Asked as a forward proxy: say so instead of forwarding.
                self._answer(200, json.dumps({"proxied": self.path}).encode())
                return
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/echo":
                h = {k: v for k, v in rec["headers"].items() if k != "x-key"}
                body = json.dumps({"method": self.command, "path": self.path, "headers": h,
                                   "has_key": "x-key" in rec["headers"],
                                   "body": rec["body"].decode("latin-1")}).encode()
                self._answer(200, body)
            elif url.path == "/big":
                self._answer(200, b"a" * int(q.get("n", "0")), "text/plain")
            elif url.path == "/redirect":
                self._answer(302, extra=[("Location", q["to"])])
            elif url.path == "/loop":
                self._answer(302, extra=[("Location", "/loop")])
            elif url.path == "/status":
                self._answer(int(q["code"]))
            elif url.path == "/headers":
                self._answer(200, b"{}", extra=[("X-Upstream", "yes"), ("Set-Cookie", "a=1"),
                                                ("Set-Cookie", "b=2")])
            elif url.path == "/hang":
                self._hang(q.get("tag"))
            else:
                self._answer(404)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _route

    return H


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    """A CA and a server certificate for 127.0.0.1 and localhost, signed by
    it, in directory d: <name>-ca.pem, <name>-srv.pem, <name>-srv.key."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", f"{name}-ca.key", "-out", f"{name}-ca.pem",
             "-subj", f"/CN={name} test CA", "-days", "2",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    _openssl("req", *ec, "-keyout", f"{name}-srv.key", "-out", f"{name}-srv.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)
    with open(os.path.join(d, f"{name}-ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", f"{name}-srv.csr", "-CA", f"{name}-ca.pem",
             "-CAkey", f"{name}-ca.key", "-CAcreateserial", "-out", f"{name}-srv.pem",
             "-days", "2", "-extfile", f"{name}-ext.cnf", cwd=d)
    return os.path.join(d, f"{name}-ca.pem")


def tls_context(d, name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, f"{name}-srv.pem"), os.path.join(d, f"{name}-srv.key"))
    return ctx


# Policies are written as the harness writes them; tests import it from here too.
write_policy = mcpx_harness.write_policy


def closed_port():
    """A loopback port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

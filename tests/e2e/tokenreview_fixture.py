"""A stand-in for the Kubernetes API server's TokenReview, since no API
server runs here: an HTTPS server on 127.0.0.1 (certificate from a CA made
with openssl at test time, egress_fixture.make_ca) that implements
POST /apis/authentication.k8s.io/v1/tokenreviews as documented for
authentication.k8s.io/v1:

  request   {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
             "spec": {"token": "...", "audiences": ["mcp-exec"]}}
            with the reviewer's own token in Authorization: Bearer
  response  201, the same object with "status": {"authenticated": bool,
            "user": {"username", "uid", "groups", "extra"},
            "audiences": [the intersection of spec.audiences and the
            token's], "error": "..."} (a token whose audiences do not meet
            the request's is not authenticated, as the API server does)

Tokens are JWT-shaped (header.payload.signature, payload with exp, aud and
sub) and registered with add_token; the fixture also answers 500 or slowly
when told to (slow: after `delay` seconds), counts the reviews per token and
in total, and the most it was ever answering at once (max_in_flight)."""
import base64
import http.server
import json
import os
import ssl
import threading
import time

from egress_fixture import make_ca, tls_context


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(sub, aud, exp):
    head = b64url(json.dumps({"alg": "RS256", "kid": "test"}).encode())
    body = b64url(json.dumps({"sub": sub, "aud": aud, "exp": exp, "iat": int(time.time()),
                              "iss": "https://kubernetes.default.svc"}).encode())
    return f"{head}.{body}.{b64url(os.urandom(64))}"


class TokenReviewServer:
    PATH = "/apis/authentication.k8s.io/v1/tokenreviews"

    def __init__(self, d, pod_token):
        self.ca = make_ca(d, "apiserver")
        self.pod_token = pod_token
        self.tokens = {}        # token -> (username, audiences)
        self.reviews = {}       # token -> count
        self.bad_requests = []  # what did not follow the documented request
        self.mode = "ok"        # "ok", "500", "slow"
        self.delay = 8          # seconds a "slow" answer takes
        self.total = 0          # reviews received
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        fx = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                if self.path != fx.PATH:
                    return self._send(404, {"kind": "Status", "code": 404})
                if self.headers.get("Authorization") != "Bearer " + fx.pod_token:
                    with fx.lock:
                        fx.bad_requests.append("reviewer token")
                    return self._send(401, {"kind": "Status", "code": 401})
                try:
                    req = json.loads(raw)
                    assert req["apiVersion"] == "authentication.k8s.io/v1"
                    assert req["kind"] == "TokenReview"
                    token, want = req["spec"]["token"], req["spec"]["audiences"]
                    assert self.headers.get("Content-Type") == "application/json"
                except (ValueError, KeyError, AssertionError, TypeError):
                    with fx.lock:
                        fx.bad_requests.append(raw[:200])
                    return self._send(400, {"kind": "Status", "code": 400})
                with fx.lock:
                    fx.reviews[token] = fx.reviews.get(token, 0) + 1
                    fx.total += 1
                    fx.in_flight += 1
                    fx.max_in_flight = max(fx.max_in_flight, fx.in_flight)
                    mode = fx.mode
                    known = fx.tokens.get(token)
                try:
                    self._answer(req, mode, known, want)
                finally:
                    with fx.lock:
                        fx.in_flight -= 1

            def _answer(self, req, mode, known, want):
                if mode == "500":
                    return self._send(500, {"kind": "Status", "code": 500,
                                            "message": "etcd is down"})
                if mode == "slow":
                    time.sleep(fx.delay)
                status = {"authenticated": False, "user": {}}
                if known is None:
                    status["error"] = "invalid bearer token"
                else:
                    user, auds = known
                    common = [a for a in want if a in auds]
                    if common:
                        ns, name = user.split(":")[2:4]
                        status = {"authenticated": True, "audiences": common, "user": {
                            "username": user, "uid": "0f6b-" + name,
                            "groups": ["system:serviceaccounts",
                                       "system:serviceaccounts:" + ns, "system:authenticated"],
                            "extra": {"authentication.kubernetes.io/pod-name": ["client-0"]}}}
                    else:
                        status["error"] = ("[invalid bearer token, token audiences %s is "
                                           "invalid for the target audiences %s]" % (auds, want))
                self._send(201, {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
                                 "metadata": {"creationTimestamp": None},
                                 "spec": req["spec"], "status": status})

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.httpd.socket = tls_context(d, "apiserver").wrap_socket(self.httpd.socket,
                                                                   server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def add_token(self, user, audiences=("mcp-exec",), exp_in=3600):
        tok = jwt(user, list(audiences), int(time.time()) + exp_in)
        with self.lock:
            self.tokens[tok] = (user, list(audiences))
        return tok

    def count(self, token):
        with self.lock:
            return self.reviews.get(token, 0)

    def stop(self):
        self.httpd.shutdown()

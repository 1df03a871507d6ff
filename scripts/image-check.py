"""Smoke test of what the runtime image promises run code, run by
scripts/image-rootfs.py in a chroot of the assembled tree (so a library that
the allowlist left out fails the image build) and by
scripts/container-test.sh inside the built image.

It exercises the paths user code takes, not just the imports: BLAS/LAPACK
under numpy, pandas' CSV parser and groupby, matplotlib's Agg backend saving
PNG, PDF and SVG (PDF embeds fonts through fontTools), Pillow decoding and
encoding PNG and JPEG, YAML, Jinja2, time zones, the CA bundle and the
libraries the server loads on first use (libcurl, libhiredis).
With arguments (the languages beside Python the image offers: bash,
javascript) it also runs what a bash or JavaScript run relies on: bash with
coreutils, grep, sed, gawk, findutils, jq, sqlite3 and file in a pipeline,
and Node.js reading stdin as an ES module. `--import NAME` (repeated) imports
each module a platform team added to the image (the Dockerfile's
EXTRA_PACKAGES and wheels, named by EXTRA_IMPORTS), in a fresh interpreter
each, so one that is missing or lacks a library is named.
Prints "image-check: ok" and exits 0, or raises.
"""
import ctypes
import io
import os
import re
import ssl
import subprocess
import sys
import tempfile
import zoneinfo

os.environ.setdefault("MPLCONFIGDIR", tempfile.mkdtemp())

import jinja2
import matplotlib
import numpy
import pandas
import yaml
from PIL import Image

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

a = numpy.array([[4.0, 1.0], [2.0, 3.0]])
assert abs(numpy.linalg.det(a) - 10.0) < 1e-9
assert numpy.allclose(numpy.linalg.solve(a, [1.0, 2.0]) @ a.T, [1.0, 2.0])

df = pandas.read_csv(io.StringIO("k,v\na,1\nb,2\na,3\n"))
assert df.groupby("k")["v"].sum().to_dict() == {"a": 4, "b": 2}

fig, ax = plt.subplots()
ax.plot([1, 2, 3], [1, 4, 9], label="squares")
ax.set_title("image-check")
ax.legend()
for fmt, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")):
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt)
    assert buf.getvalue().startswith(magic), fmt
    if fmt == "png":
        png = buf.getvalue()

img = Image.open(io.BytesIO(png))
img.load()
out = io.BytesIO()
img.convert("RGB").save(out, format="JPEG")
assert Image.open(io.BytesIO(out.getvalue())).format == "JPEG"

assert yaml.safe_load("a: [1, 2]") == {"a": [1, 2]}
assert jinja2.Template("{{ x }}!").render(x="hi") == "hi!"
assert str(zoneinfo.ZoneInfo("Europe/Paris")) == "Europe/Paris"
# The bundle libcurl (the egress broker) and mcp-exec-client verify peers with.
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations("/etc/ssl/certs/ca-certificates.crt")
assert ctx.cert_store_stats()["x509_ca"] > 100, "the CA bundle is missing or empty"
# The libraries mcp-exec loads with dlopen on first use, which no NEEDED
# entry of its binaries pulls in: libcurl (egress, upstream servers) and
# libhiredis (a redis:// store). Missing, those features fail only when used.
for lib in ("libcurl.so.4", "libhiredis.so.0.14"):
    ctypes.CDLL(lib)
ENV = {"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir(), "LANG": "C.UTF-8"}
if "bash" in sys.argv[1:]:
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "main.sh"), "w") as f:
            f.write("printf 'b,2\\na,1\\na,3\\n' > in.csv\n"
                    "sort in.csv | cut -d, -f1 | uniq -c | gawk '{print $2\"=\"$1}' | tr '\\n' ' '\n"
                    "grep -c a in.csv | sed 's/^/a-rows=/'\n"
                    "echo '{\"n\":[1,2]}' | jq -c '.n | add'\n"
                    "sqlite3 :memory: 'select 6*7;'\n"
                    "file -b --mime-type in.csv; find . -name '*.csv' | wc -l\n"
                    "read -r x; echo \"stdin=$x\"\n")
        r = subprocess.run(["/usr/bin/bash", "--noprofile", "--norc", "main.sh"], cwd=d, env=ENV,
                           input="hi\n", capture_output=True, text=True, timeout=60)
        want = "a=2 b=1 a-rows=2\n3\n42\ntext/csv\n1\nstdin=hi\n"
        assert r.returncode == 0 and r.stdout == want, (r.stdout, r.stderr)
if "javascript" in sys.argv[1:]:
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "main.mjs"), "w") as f:
            f.write("import { createHash } from 'node:crypto';\n"
                    "let s = ''; for await (const c of process.stdin) s += c;\n"
                    "console.log(createHash('sha256').update(s).digest('hex').slice(0, 8),"
                    " new Intl.NumberFormat('de-DE').format(1234.5));\n")
        r = subprocess.run(["/usr/bin/node", "--max-old-space-size=256", "main.mjs"], cwd=d,
                           env=ENV, input="hi", capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout == "8f434346 1.234,5\n", (r.stdout, r.stderr)
args = sys.argv[1:]
for i, a in enumerate(args[:-1]):
    if a == "--import":
        name = args[i + 1]
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name), f"--import {name!r}: not a module name"
        r = subprocess.run([sys.executable, "-c", f"import {name}; print({name}.__name__)"],
                           env=ENV, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == name, \
            f"--import {name}: {(r.stdout + r.stderr).strip()[-800:]}"
        print(f"image-check: import {name}: ok")
print("image-check: ok")

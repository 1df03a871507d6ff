"""Smoke test of what the runtime image promises run code, run by
scripts/image-rootfs.py in a chroot of the assembled tree (so a library that
the allowlist left out fails the image build) and by
scripts/container-test.sh inside the built image.

It exercises the paths user code takes, not just the imports: BLAS/LAPACK
under numpy, pandas' CSV parser and groupby, matplotlib's Agg backend saving
PNG, PDF and SVG (PDF embeds fonts through fontTools), Pillow decoding and
encoding PNG and JPEG, YAML, Jinja2, time zones and the CA bundle.
Prints "image-check: ok" and exits 0, or raises.
"""
import io
import os
import ssl
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
print("image-check: ok")

# What real user code needs must keep working inside every layer.
import concurrent.futures
import multiprocessing
import subprocess

import numpy as np


def sq(x):
    return x * x


print("numpy=%.1f" % float(np.linalg.det(np.eye(3) * 2)))
with multiprocessing.Pool(2) as pool:
    print("pool=%d" % sum(pool.map(sq, range(10))))
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    print("threads=%d" % sum(ex.map(sq, range(10))))
print("subprocess=%d" % subprocess.run(["/bin/echo", "hi"], capture_output=True).returncode)
import matplotlib.pyplot as plt  # noqa: E402

plt.plot([1, 2, 3])
plt.savefig("plot.png")
print("matplotlib=ok")

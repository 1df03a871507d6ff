# Forks sleeping children until fork fails; RLIMIT_NPROC must stop it.
import os
import resource
import time

n, stop = 0, "none"
while n < 2000:
    try:
        pid = os.fork()
    except OSError as e:
        stop = "errno:%d" % e.errno
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print("nproc_limit=%d" % resource.getrlimit(resource.RLIMIT_NPROC)[0])
print("forks=%d" % n)
print("stop=" + stop)

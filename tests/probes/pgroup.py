# A double-forked grandchild that tries setsid, closes stdio and sleeps: it
# must be dead once the server has killed and reaped the run. stdin: "exit"
# (the leader exits at once) or "stay" (the leader sleeps until killed).
import os
import sys
import time

mode = sys.stdin.readline().strip()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    if os.fork() == 0:
        try:
            os.setsid()
            res = "ok"
        except OSError as e:
            res = "errno:%d" % e.errno
        os.write(w, ("%d %s\n" % (os.getpid(), res)).encode())
        os.close(w)
        for fd in (0, 1, 2):
            os.close(fd)
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
gpid, res = os.read(r, 100).decode().split()
print("grandchild=" + gpid)
print("grandchild_setsid=" + res)
if mode == "stay":
    time.sleep(60)

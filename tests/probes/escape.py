# Escape probes: each line is name=ok or name=errno:N:NAME. The test decides
# what is expected from the layers the kernel offers. Input (stdin): the
# server pid on the first line.
import ctypes
import errno
import fcntl
import os
import resource
import signal
import socket
import sys
import termios
import time

server = int(sys.stdin.readline())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

NR = dict(ptrace=101, personality=135, setpriority=141, mount=165, keyctl=250,
          unshare=272, perf_event_open=298, prlimit64=302, setns=308,
          process_vm_readv=310, kcmp=312, bpf=321, userfaultfd=323,
          io_uring_setup=425, pidfd_open=434, clone3=435, kill=62, clone=56,
          ioprio_set=251)
CLONE_NEWUSER, CLONE_NEWNET, CLONE_PARENT, SIGCHLD = 0x10000000, 0x40000000, 0x8000, 17
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0


def sc(name, *args):
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(ctypes.c_long(NR[name]), *conv)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def report(name, fn):
    try:
        fn()
        print(name + "=ok")
    except OSError as e:
        print("%s=errno:%d:%s" % (name, e.errno, errno.errorcode.get(e.errno, "?")))


def in_child(fn):
    # Runs fn in a forked child (setsid/setpgid must not run in the group
    # leader, which is already a session leader) and re-raises its errno.
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            os._exit(0)
        except OSError as e:
            os._exit(e.errno)
    _, st = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(st)
    if code:
        raise OSError(code, os.strerror(code) if code > 0 else "signal")


def raw_clone_newnet():
    r = sc("clone", CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    os.waitpid(r, 0)


def write_at(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    os.unlink(path)


def mkdir_at(path):
    os.mkdir(path)
    os.rmdir(path)


def tcp(action):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if action == "bind":
            s.bind(("127.0.0.1", 0))
        else:
            s.settimeout(2)
            s.connect(("127.0.0.1", 9))
    finally:
        s.close()


tag = "%d" % os.getpid()
report("sock_inet", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
report("sock_inet6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close())
report("sock_netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close())
report("sock_unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
report("socketpair_unix", lambda: [s.close() for s in socket.socketpair(socket.AF_UNIX)])
report("tcp_bind", lambda: tcp("bind"))
report("tcp_connect", lambda: tcp("connect"))
report("write_tmp", lambda: write_at("/tmp/mcpx-escape-" + tag))
report("mkdir_tmp", lambda: mkdir_at("/tmp/mcpx-escape-dir-" + tag))
report("write_dev_shm", lambda: write_at("/dev/shm/mcpx-escape-" + tag))
report("write_workdir", lambda: write_at("inside-" + tag))
def read_environ():
    # Only bytes other than NUL count: gVisor serves this file to every
    # process, and the server zeroes its environment block there.
    if not open("/proc/%d/environ" % server, "rb").read(65536).strip(b"\0"):
        raise OSError(0, "only zeros")


report("read_server_environ", read_environ)
report("kill_server", lambda: os.kill(server, 0))
report("kill_server_group", lambda: os.kill(-server, 0))
report("kill_all", lambda: os.kill(-1, 0))
report("kill_all_raw32", lambda: sc("kill", 0xffffffff, 0))
report("setsid", lambda: in_child(os.setsid))
report("setpgid", lambda: in_child(lambda: os.setpgid(0, 0)))
report("ptrace_attach", lambda: sc("ptrace", 16, server, 0, 0))
report("ptrace_traceme", lambda: in_child(lambda: sc("ptrace", 0, 0, 0, 0)))
report("unshare_user", lambda: in_child(lambda: sc("unshare", CLONE_NEWUSER)))
report("unshare_net", lambda: in_child(lambda: sc("unshare", CLONE_NEWNET)))
report("clone_newnet", raw_clone_newnet)
report("setns", lambda: sc("setns", 0, 0))
report("mount", lambda: sc("mount", b"none", b"/tmp", b"tmpfs", 0, 0))
report("io_uring_setup", lambda: sc("io_uring_setup", 1, ctypes.create_string_buffer(120)))
report("clone3", lambda: sc("clone3", 0, 0))
report("keyctl", lambda: sc("keyctl", 0, -3, 0))
report("bpf", lambda: sc("bpf", 0, 0, 0))
report("perf_event_open", lambda: sc("perf_event_open", 0, 0, -1, -1, 0))
report("userfaultfd", lambda: sc("userfaultfd", 0))
report("personality_query", lambda: sc("personality", 0xffffffff))


def clone_parent():
    # The new process would be a child of the run's parent (the zygote or
    # the server), outside the run's reaping.
    r = sc("clone", CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)


def ipc(get, rm, *args):
    # A SysV object that outlives the run; removed again if it was made.
    r = get(*args)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    rm(r, IPC_RMID, None)


def mq():
    libc.mq_open.restype = ctypes.c_int
    name = b"/mcpx-escape-" + tag.encode()
    r = libc.mq_open(name, os.O_RDWR | os.O_CREAT, 0o600, None)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    libc.mq_unlink(name)


report("clone_parent", clone_parent)
report("sysv_shmget", lambda: ipc(libc.shmget, libc.shmctl, IPC_PRIVATE, 4096, IPC_CREAT | 0o600))
report("sysv_msgget", lambda: ipc(libc.msgget, libc.msgctl, IPC_PRIVATE, IPC_CREAT | 0o600))
report("sysv_semget", lambda: ipc(libc.semget, lambda i, c, _: libc.semctl(i, 0, c),
                                  IPC_PRIVATE, 1, IPC_CREAT | 0o600))
report("mq_open", mq)

# Scheduling and limits of another process of the uid: a child of ours
# stands in for the zygote or the server (same uid, no other layer in the
# way). The caller itself (pid 0) keeps every one of them.
try:
    other = os.fork()
except OSError as e:  # a uid busy with other tests' runs may refuse it
    print("other=errno:%d" % e.errno)
    print("done=1")
    sys.exit(0)
if other == 0:
    time.sleep(60)
    os._exit(0)
mask = os.sched_getaffinity(0)
prio = os.getpriority(os.PRIO_PROCESS, 0)
nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
report("sched_setaffinity_other", lambda: os.sched_setaffinity(other, mask))
report("sched_setscheduler_other",
       lambda: os.sched_setscheduler(other, os.SCHED_OTHER, os.sched_param(0)))
report("sched_setparam_other", lambda: os.sched_setparam(other, os.sched_param(0)))
report("setpriority_other", lambda: os.setpriority(os.PRIO_PROCESS, other, prio))
report("ioprio_set_other", lambda: sc("ioprio_set", 1, other, 0))
report("prlimit_other", lambda: resource.prlimit(other, resource.RLIMIT_NOFILE, nofile))
report("ptrace_child", lambda: sc("ptrace", 16, other, 0, 0))
report("sched_setaffinity_self", lambda: os.sched_setaffinity(0, mask))
report("setpriority_self", lambda: os.setpriority(os.PRIO_PROCESS, 0, prio))
report("prlimit_self", lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, nofile))
report("sched_setaffinity_own_pid", lambda: os.sched_setaffinity(os.getpid(), mask))
os.kill(other, signal.SIGKILL)
os.waitpid(other, 0)
report("pidfd_open_server", lambda: sc("pidfd_open", server, 0))
def vm_readv():
    buf = ctypes.create_string_buffer(8)
    local = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)  # struct iovec
    remote = (ctypes.c_void_p * 2)(0x10000, 8)
    sc("process_vm_readv", server, local, 1, remote, 1, 0)


report("process_vm_readv", vm_readv)
report("kcmp", lambda: sc("kcmp", server, os.getpid(), 0, 0, 0))
report("prlimit_server", lambda: sc("prlimit64", server, 7, 0, ctypes.create_string_buffer(16)))
report("setpriority_user", lambda: sc("setpriority", 2, 0, 19))
report("tiocsti", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x"))
print("done=1")

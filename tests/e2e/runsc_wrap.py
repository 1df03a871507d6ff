#!/usr/bin/python3
"""Runs one command under gVisor in the pod's posture, for the end-to-end
tests (mcpx_harness.py uses it when MCPX_WRAP names it).

    runsc_wrap.py [--uid N] [--gid N] -- COMMAND [ARG...]

The command runs in a gVisor sandbox (`runsc run` of an OCI bundle made
here, as containerd would make it for a pod with runtimeClassName: gvisor):
the host's / as a read-only root, the host's /tmp bind-mounted read-write
(where the server makes its workdirs, and where the tests look for what a
run left), a private /dev/shm and /dev, no network (--network=none: only
loopback), the given uid and gid (65532 by default) with no capabilities at
all, no_new_privs, RLIMIT_NOFILE 4096. The environment and the working
directory are this process's. stdin, stdout and stderr are passed through;
the exit status is the command's. The command's environment also says
which runsc runs it: MCPX_RUNSC_VERSION=20240729 (the date of `runsc
--version`; tests expect what that release can do).

runsc is MCPX_RUNSC (default: runsc on PATH); extra runsc flags come from
MCPX_RUNSC_FLAGS. MCPX_RUNSC_DO=1 runs `runsc --network=none do COMMAND`
instead, as an operator would try the binary: root in the sandbox (so the
server's runs drop to 65532, --uid is ignored) on the host's filesystem
with runsc's in-memory overlay. MCPX_OCI_RUNTIME=runc runs the same bundle under runc
instead (no loopback: runc brings no interface up), for benchmarks that put
the two side by side (bench/runtimes.sh). Needs root (runsc run does). The sandbox dies with this
process: runsc gets SIGKILL if this wrapper dies (PR_SET_PDEATHSIG), and
runsc's sandbox dies with runsc; SIGTERM and SIGINT are passed on to the
command. The bundle and runsc's state live in a temporary directory removed
at the end, and stdio is made blocking again (runsc leaves it non-blocking).
"""
import ctypes
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid


def bundle_config(args, uid, gid):
    no_caps = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": uid, "gid": gid, "additionalGids": []},
            "args": args,
            "env": [f"{k}={v}" for k, v in os.environ.items()],
            "cwd": os.getcwd(),
            "capabilities": no_caps,
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
            "noNewPrivileges": True,
        },
        "root": {"path": "/", "readonly": True},
        "hostname": "mcpx-gvisor",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
             "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=262144k"]},
            {"destination": "/tmp", "type": "bind", "source": "/tmp", "options": ["rbind", "rw"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
        ],
        "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")]},
    }


def runsc_version(runsc):
    """The date of a runsc release ("runsc version 0.0~20240729.0" ->
    "20240729"), or "0" when it does not say."""
    try:
        out = subprocess.run([runsc, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "0"
    m = re.search(r"(20\d{6})", out.split("\n", 1)[0])
    return m.group(1) if m else "0"


def parse(argv):
    uid = gid = 65532
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] in ("--uid", "--gid") and i + 1 < len(argv):
            if argv[i] == "--uid":
                uid = int(argv[i + 1])
                gid = uid if gid == 65532 else gid
            else:
                gid = int(argv[i + 1])
            i += 2
        else:
            sys.exit(f"runsc_wrap: unknown argument {argv[i]!r} (usage: [--uid N] [--gid N] -- CMD...)")
    if i + 1 >= len(argv):
        sys.exit("runsc_wrap: no command after --")
    return uid, gid, argv[i + 1:]


def blocking_again():
    """runsc leaves O_NONBLOCK on the stdio it was given, and whoever shares
    those open files (a CI log pipe) would then lose writes to EAGAIN."""
    for fd in (0, 1, 2):
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        except OSError:
            pass


def die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def main():
    uid, gid, cmd = parse(sys.argv[1:])
    use_runc = os.environ.get("MCPX_OCI_RUNTIME") == "runc"
    runsc = shutil.which("runc") if use_runc else (os.environ.get("MCPX_RUNSC") or
                                                    shutil.which("runsc"))
    if os.geteuid() != 0 or not runsc:
        print("SKIP: runsc_wrap.py needs root and runsc (bash scripts/deps.sh --gvisor)")
        sys.exit(77)
    if not use_runc:
        os.environ["MCPX_RUNSC_VERSION"] = runsc_version(runsc)
    if os.environ.get("MCPX_RUNSC_DO") == "1" and not use_runc:
        child = subprocess.Popen([runsc, "--network=none", "do", *cmd], preexec_fn=die_with_parent)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda s, _f: child.send_signal(s))
        rc = child.wait()
        blocking_again()
        sys.exit(rc if rc >= 0 else 128 - rc)
    work = tempfile.mkdtemp(prefix="mcpx-runsc-")
    try:
        bundle = os.path.join(work, "bundle")
        os.mkdir(bundle)
        config = bundle_config(cmd, uid, gid)
        if use_runc:
            # runc cannot take / itself as the root it pivots into: a
            # recursive bind of it, a slave so nothing flows back.
            root = os.path.join(work, "rootfs")
            os.mkdir(root)
            subprocess.run(["mount", "--rbind", "/", root], check=True)
            subprocess.run(["mount", "--make-rslave", root], check=True)
            config["root"]["path"] = root
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump(config, f)
        cid = "mcpx-" + uuid.uuid4().hex[:16]
        flags = [] if use_runc else ["--network=none",
                                      *shlex.split(os.environ.get("MCPX_RUNSC_FLAGS", ""))]
        argv = [runsc, "--root", os.path.join(work, "state"), *flags,
                "run", "--bundle", bundle, cid]
        child = subprocess.Popen(argv, preexec_fn=die_with_parent)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda s, _f: child.send_signal(s))
        rc = child.wait()
        subprocess.run([runsc, "--root", os.path.join(work, "state"), "delete", "-force", cid],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        blocking_again()
    finally:
        if os.path.isdir(os.path.join(work, "rootfs")):
            subprocess.run(["umount", "-R", "-l", os.path.join(work, "rootfs")],
                           stderr=subprocess.DEVNULL)
            os.rmdir(os.path.join(work, "rootfs"))
        shutil.rmtree(work, ignore_errors=True)
    # runsc reports a command killed by signal N as 128+N, as a shell would.
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()

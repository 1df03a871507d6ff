#!/usr/bin/python3
"""Assemble the runtime image's root filesystem from installed Debian packages.

The Dockerfile's assembly stage installs the runtime packages on a normal
Debian base and runs this script; the final stage is `FROM scratch` with the
tree this writes. What goes in is an allowlist, not a base image minus a
denylist:

  - the files (`dpkg -L`) of the given root packages and of every package
    they need at run time (Depends and Pre-Depends, recursively; the first
    installed alternative of an `a | b` dependency);
  - minus the packages that only install or manage software, or are a shell
    or an interpreter other than Python (EXCLUDED: dpkg, apt, debconf,
    perl-base, bash, dash, coreutils, ...), whatever depends on them: their
    maintainer scripts never run in the image;
  - except, with --languages bash, the shell and the tools a bash run is
    offered (bash, coreutils, grep, sed, findutils and the gawk, jq,
    sqlite3 and file packages the Dockerfile installs): exec's `language:
    "bash"` needs them, so they are taken out of EXCLUDED; dash (/bin/sh),
    perl and the package managers stay out;
  - minus the packages given with --drop: dependencies Debian declares
    for features the image does not offer (sympy for fontTools' symbolic
    font maths, Tk for interactive plot windows, ...); the --check-script
    proves that what the image does offer still works without them;
  - minus documentation, manual pages, translations and the Python
    packages' own test suites (`tests` directories under dist-packages);
  - plus what package scripts generate at install time and `dpkg -L` does
    not list: the byte-compiled `__pycache__` files of the Python modules
    that are copied, the `update-alternatives` links (libblas.so.3 for
    numpy), the CA bundle under /etc/ssl/certs, and a fresh ld.so.cache;
  - plus the given extra trees (--extra-tree: the wheels a platform team
    installed into /usr/local/lib/python3.11/dist-packages), copied whole;
  - plus the given extra files (the server binaries), a two-line
    /etc/passwd and /etc/group (root and the service user 65532), /tmp mode
    1777, and no other world- or group-writable directory (/var/tmp does
    not exist).

Set-uid and set-gid bits are dropped from everything copied. The result is
checked at the end by running the given commands in a chroot of the new
tree (for example `python3 -c 'import numpy'` and `mcp-exec --version`), so
a missing library fails the image build rather than a run in production.

This script does not build software, pull packages or decide which Python
modules the image ships (the Dockerfile does); it only copies.
"""
import argparse
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys

# Packages whose files never go into the runtime image: package management
# and its helpers, shells and their utilities, and interpreters other than
# Python. Their only users in the dependency graph are maintainer scripts.
EXCLUDED = {
    "dpkg", "apt", "libapt-pkg6.0", "debconf", "debconf-i18n", "perl-base", "perl",
    "perl-modules-5.36", "libperl5.36", "bash", "dash", "coreutils", "debianutils",
    "sensible-utils", "diffutils", "findutils", "grep", "sed", "gzip", "tar", "util-linux",
    "login", "passwd", "mount", "ncurses-bin", "hostname", "init-system-helpers",
    "install-info", "lsb-base", "sysvinit-utils", "base-passwd", "base-files", "libc-bin",
    "readline-common", "openssl", "ucf", "adduser", "bsdutils", "procps", "usrmerge",
}

# Paths never copied, even when a needed package ships them.
SKIP_PREFIXES = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/lintian/",
                 "/usr/share/locale/", "/usr/share/bug/", "/usr/share/doc-base/",
                 "/usr/share/bash-completion/", "/usr/share/zsh/", "/var/lib/dpkg/",
                 "/usr/share/menu/", "/etc/cron.daily/", "/etc/logrotate.d/")

# What --languages bash puts back: the shell and the utilities a bash run is
# offered (docs/tool.md). /usr/bin/env comes with coreutils.
BASH_TOOLS = {"bash", "coreutils", "grep", "sed", "findutils"}

DEP_SPLIT = re.compile(r"\s*,\s*")


def installed_packages():
    """{package: {"deps": [[alternative, ...], ...], "provides": [...]}} of installed packages."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Status}\t${Depends}\t${Pre-Depends}\t${Provides}\n"],
        check=True, capture_output=True, text=True).stdout
    pkgs = {}
    for line in out.splitlines():
        name, status, dep, predep, provides = (line.split("\t") + [""] * 5)[:5]
        if status != "installed":
            continue
        deps = []
        for group in DEP_SPLIT.split(", ".join(x for x in (predep, dep) if x)):
            if not group.strip():
                continue
            alts = [re.split(r"[\s(:]", a.strip(), maxsplit=1)[0] for a in group.split("|")]
            deps.append([a for a in alts if a])
        pkgs[name] = {"deps": deps,
                      "provides": [re.split(r"[\s(:]", p.strip(), maxsplit=1)[0]
                                   for p in provides.split(",") if p.strip()]}
    return pkgs


def closure(roots, pkgs, dropped):
    """Packages reachable from roots through run-time dependencies, minus
    EXCLUDED and dropped."""
    providers = {}
    for name, info in pkgs.items():
        for p in info["provides"]:
            providers.setdefault(p, []).append(name)

    def resolve(alt):
        if alt in pkgs:
            return alt
        return next(iter(sorted(providers.get(alt, []))), None)

    seen, todo = set(), list(roots)
    for r in roots:
        if r not in pkgs:
            sys.exit(f"image-rootfs: root package {r} is not installed")
    while todo:
        name = todo.pop()
        if name in seen or name in EXCLUDED or name in dropped:
            continue
        seen.add(name)
        for group in pkgs[name]["deps"]:
            chosen = None
            for alt in group:
                chosen = resolve(alt)
                if chosen:
                    break
            if chosen and chosen not in seen:
                todo.append(chosen)
    return seen


def canonical(path):
    """path with its parent directories resolved (merged /usr: /lib -> /usr/lib)."""
    parent, base = os.path.split(path)
    return os.path.join(os.path.realpath(parent), base)


# A Python package's own test suite: .../dist-packages/<pkg>/.../tests/...
TESTS = re.compile(r"^/usr/lib/python3[.0-9]*/dist-packages/.+/tests(/|$)")


def copy_entry(src, dest_root):
    """Copies one file, symlink or directory (not its contents) to dest_root."""
    if src.startswith(SKIP_PREFIXES) or TESTS.match(src) or not os.path.lexists(src):
        return
    st = os.lstat(src)
    dst = dest_root + canonical(src)
    if stat.S_ISDIR(st.st_mode):
        os.makedirs(dst, exist_ok=True)
        os.chmod(dst, stat.S_IMODE(st.st_mode) & ~0o6000)
        return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.lexists(dst):
        return
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISREG(st.st_mode):
        shutil.copyfile(src, dst)
        os.chmod(dst, stat.S_IMODE(st.st_mode) & ~0o6000)


def copy_packages(names, dest):
    for name in sorted(names):
        files = subprocess.run(["dpkg", "-L", name], check=True, capture_output=True,
                               text=True).stdout.splitlines()
        for f in files:
            if f.startswith("/") and f != "/.":
                copy_entry(f, dest)


def copy_pycache(dest):
    """The .pyc files Debian compiles at install time, for the modules copied."""
    for top in ("/usr/lib/python3", "/usr/lib/python3.11"):
        for d, dirs, files in os.walk(top):
            if os.path.basename(d) != "__pycache__":
                continue
            parent = os.path.dirname(d)
            for f in files:
                stem = f.split(".", 1)[0]
                if os.path.exists(dest + canonical(os.path.join(parent, stem + ".py"))):
                    copy_entry(d, dest)
                    copy_entry(os.path.join(d, f), dest)


def copy_alternatives(dest):
    """update-alternatives links whose chosen target was copied."""
    adir = "/var/lib/dpkg/alternatives"
    for name in sorted(os.listdir(adir)) if os.path.isdir(adir) else []:
        with open(os.path.join(adir, name)) as fh:
            lines = fh.read().split("\n")
        pairs = [(name, lines[1])]
        i = 2
        while i + 1 < len(lines) and lines[i]:
            pairs.append((lines[i], lines[i + 1]))
            i += 2
        for alt, link in pairs:
            etc = "/etc/alternatives/" + alt
            if not os.path.islink(etc):
                continue
            target = os.readlink(etc)
            if not os.path.exists(dest + canonical(target)):
                continue
            copy_entry("/etc/alternatives", dest)
            copy_entry(etc, dest)
            copy_entry(link, dest)


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
    os.chmod(path, mode)


def copy_tree(top, dest):
    """top and everything beneath it, as copy_entry copies each entry."""
    parts = top.strip("/").split("/")
    for i in range(1, len(parts)):
        copy_entry("/" + "/".join(parts[:i]), dest)
    for d, dirs, files in os.walk(top):
        copy_entry(d, dest)
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            copy_entry(os.path.join(d, n), dest)


def finish(dest, extra, trees):
    for t in trees:
        if os.path.isdir(t):
            copy_tree(t, dest)
    for f in extra:
        copy_entry(os.path.dirname(f), dest)
        copy_entry(f, dest)
    if os.path.isdir("/etc/ssl/certs"):
        for d, dirs, files in os.walk("/etc/ssl/certs"):
            copy_entry(d, dest)
            for f in files:
                copy_entry(os.path.join(d, f), dest)
    write(dest + "/etc/passwd", "root:x:0:0:root:/root:/nonexistent\n"
          "nonroot:x:65532:65532:nonroot:/nonexistent:/nonexistent\n")
    write(dest + "/etc/group", "root:x:0:\nnonroot:x:65532:\n")
    # Mount points the runtime fills; only /tmp is writable, and only where
    # a tmpfs or an emptyDir is mounted on it.
    for d, mode in (("proc", 0o555), ("sys", 0o555), ("dev", 0o755), ("etc", 0o755),
                    ("run", 0o755), ("var", 0o755), ("tmp", 0o1777), ("root", 0o700)):
        os.makedirs(os.path.join(dest, d), exist_ok=True)
        os.chmod(os.path.join(dest, d), mode)
    if not os.path.lexists(dest + "/var/run"):
        os.symlink("/run", dest + "/var/run")
    subprocess.run(["ldconfig", "-r", dest], check=True)


def check_tree(dest, languages):
    """No package manager, no perl, no /bin/sh; no shell at all unless bash is
    a language runs may use; no writable directory but /tmp."""
    banned = ["/bin/sh", "/bin/dash", "/usr/bin/perl", "/usr/bin/dpkg", "/usr/bin/apt",
              "/usr/bin/apt-get", "/var/tmp"]
    if "bash" not in languages:
        banned += ["/bin/bash", "/usr/bin/env"]
    bad = [p for p in banned if os.path.lexists(dest + p)]
    for d, dirs, files in os.walk(dest):
        for n in dirs:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o022 and p != dest + "/tmp":
                bad.append(p[len(dest):] + " (writable by others)")
    if bad:
        sys.exit("image-rootfs: the tree must not contain: " + ", ".join(bad))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--packages", required=True, help="space-separated root packages")
    ap.add_argument("--extra", nargs="*", default=[], help="more files to copy (absolute paths)")
    ap.add_argument("--drop", default="", help="space-separated packages left out with their files")
    ap.add_argument("--check", action="append", default=[],
                    help="a command (shell-style words) that must succeed in a chroot of the tree")
    ap.add_argument("--check-script", help="a Python file run with the tree's python3 in a chroot")
    ap.add_argument("--extra-tree", action="append", default=[],
                    help="a directory copied whole with what it holds (absolute path)")
    ap.add_argument("--check-imports", default="",
                    help="space-separated modules the --check-script must also import")
    ap.add_argument("--languages", default="",
                    help="space-separated languages beside Python the image offers runs: bash, "
                         "javascript (their runtimes must be among --packages)")
    a = ap.parse_args()
    languages = set(a.languages.split())
    unknown = languages - {"bash", "javascript"}
    if unknown:
        sys.exit(f"image-rootfs: unknown --languages: {' '.join(sorted(unknown))}")
    if "bash" in languages:
        EXCLUDED.difference_update(BASH_TOOLS)
    dest = os.path.abspath(a.out)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    os.chmod(dest, 0o755)
    pkgs = installed_packages()
    keep = closure(a.packages.split(), pkgs, set(a.drop.split()))
    print(f"image-rootfs: {len(keep)} packages: {' '.join(sorted(keep))}")
    # The merged-/usr links (/lib -> usr/lib, ...) as on the build system,
    # before anything is copied through them.
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        if os.path.islink("/" + top):
            os.symlink(os.readlink("/" + top), os.path.join(dest, top))
    copy_packages(keep, dest)
    copy_pycache(dest)
    copy_alternatives(dest)
    finish(dest, a.extra, a.extra_tree)
    check_tree(dest, languages)
    checks = [shlex.split(c) for c in a.check]
    if a.check_script:
        # Copied into the tree's /tmp for the run and removed after it.
        shutil.copyfile(a.check_script, dest + "/tmp/image-check.py")
        imports = [x for m in a.check_imports.split() for x in ("--import", m)]
        checks.append(["/usr/bin/python3", "/tmp/image-check.py"] + sorted(languages) + imports)
    try:
        for argv in checks:
            r = subprocess.run(["/usr/sbin/chroot", dest] + argv, capture_output=True, text=True,
                               env={"PATH": "/usr/bin", "HOME": "/tmp"})
            if r.returncode != 0:
                sys.exit(f"image-rootfs: `{' '.join(argv)}` failed in the new tree: "
                         f"{(r.stdout + r.stderr).strip()[-1500:]}")
            print(f"image-rootfs: ok: {' '.join(argv)}")
    finally:
        for leftover in ("/tmp/image-check.py",):
            if os.path.lexists(dest + leftover):
                os.unlink(dest + leftover)
        for d, dirs, files in os.walk(dest + "/tmp", topdown=False):
            for n in files:
                os.unlink(os.path.join(d, n))
            for n in dirs:
                os.rmdir(os.path.join(d, n))


if __name__ == "__main__":
    main()

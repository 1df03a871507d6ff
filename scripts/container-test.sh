#!/usr/bin/env bash
# scripts/container-test.sh - build the mcp-exec image with rootful podman and
# test it in the production posture:
#
#   --read-only --read-only-tmpfs=false --cap-drop ALL
#   --security-opt no-new-privileges --user 65532:65532 --tmpfs /tmp
#   (and --network none; podman's --read-only alone would also mount
#   writable tmpfs on /var/tmp and /run, which a pod does not have)
#
# 1. a Debian bookworm base image made locally with debootstrap (no registry
#    needed), imported as localhost/mcpx-debian-minbase:bookworm and cached;
# 2. podman build of ./Dockerfile on that base;
# 3. the image's size (reported; at most MCPX_IMAGE_MAX_MB, 250), its
#    metadata (user, port, env), that it holds no /bin/sh, package manager or
#    perl (bash is there for bash runs) (and that `--entrypoint /bin/sh` cannot start), the runtime posture
#    seen from inside (uid, capabilities, no_new_privs, read-only root,
#    /var/tmp and /run not writable, writable /tmp, no set-uid files),
#    scripts/image-check.py (numpy, pandas, matplotlib, Pillow, ...) and
#    `mcp-exec --check-config`, as uid 65532 and as an arbitrary uid with
#    gid 0 (what OpenShift assigns);
# 4. the server started detached with the token mounted read-only like the
#    chart does, and mcp-exec-client calls from a sibling container sharing
#    its network namespace: output, exit codes, auth, sandbox probes; the
#    same under the arbitrary uid;
# 5. memory bursts (16 x 100 MiB, 32 x 60 MiB) under the chart's memory
#    limit and under 1 GiB: each ends at the memory limit with no kernel OOM
#    kill in the container's cgroup, and the next call is served;
# 6. two replicas side by side, each in a user namespace of its own (podman
#    --uidmap, as hostUsers: false): replica A's run holding 51 children does
#    not make replica B's run fail; the control (one shared host uid) does;
# 7. the escape suites (tests/e2e/test_escape.py warm and cold, and
#    test_escape_lang.py for bash, and JavaScript where the image has Node.js)
#    run inside the hardened container against the image's own server;
# 8. the same image under gVisor (podman --runtime runsc --runtime-flag
#    network=none, runsc from scripts/deps.sh --gvisor): --check-config names
#    gVisor and passes with the chart's MCP_EXEC_REQUIRE_LANDLOCK=1, the
#    server serves (calls through podman exec), and the escape suites pass
#    inside, each gVisor difference asserted (MCPX_CONTAINER_GVISOR=0 skips);
# 9. a variant built with --build-arg EXTRA_PACKAGES (python3-tabulate), a
#    wheel made here (WHEELS_DIR) and EXTRA_IMPORTS: it reuses the cached
#    layers up to the extras' step, image-check imports both, and a run in
#    the variant imports them (MCPX_CONTAINER_VARIANT=0 skips).
#
# MCPX_CONTAINER_BUILD_ONLY=1 stops after step 2 (scripts/test.sh runs that
# in the background while the host tests run).
#
# Exits 0 with "SKIP: <reason>" when podman or debootstrap cannot run here
# (not root, not installed, no runtime, no mirror). Set MCPX_CONTAINER_INSTALL=1
# to apt-get install podman, runc and debootstrap first. Prints ok/FAIL lines
# and "N passed, N failed"; exits 1 on failure.
#
# Podman on hybrid cgroup v1/v2 hosts needs runc rather than crun and explicit
# nofile/nproc ulimits (the defaults exceed the hard limits of some VMs); the
# containers.conf written below does both without touching /etc.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${MCPX_CONTAINER_CACHE:-$ROOT/.cache/container}
IMAGE=${MCPX_IMAGE:-localhost/mcp-exec:test}
BASE=${MCPX_BASE_IMAGE:-localhost/mcpx-debian-minbase:bookworm}
SUITE=bookworm
NAME=mcpx-container-test-$$
PASS=0
FAIL=0

skip() { echo "SKIP: $*"; exit 0; }
pass() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
indent() { sed 's/^/     | /'; }

# ------------------------------------------------------------ can we run? --
[ "$(id -u)" -eq 0 ] || skip "needs root for rootful podman (this script does not try rootless)"
if [ "${MCPX_CONTAINER_INSTALL:-0}" = 1 ]; then
  for t in podman runc debootstrap; do
    command -v "$t" >/dev/null 2>&1 && continue
    echo "installing podman runc debootstrap" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends podman runc debootstrap >/dev/null ||
      skip "apt-get install podman runc debootstrap failed"
    break
  done
fi
command -v podman >/dev/null 2>&1 || skip "podman is not installed (apt-get install podman runc, or MCPX_CONTAINER_INSTALL=1)"
command -v runc >/dev/null 2>&1 || skip "runc is not installed (crun 1.8 cannot run on hybrid cgroup hosts)"

mkdir -p "$CACHE"
cat >"$CACHE/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF=$CACHE/containers.conf
PODMAN=(podman --runtime runc)

WORK=$(mktemp -d)
cleanup() {
  "${PODMAN[@]}" rm -f -t 0 "$NAME" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

# ------------------------------------------------------------- base image --
if ! "${PODMAN[@]}" image exists "$BASE"; then
  command -v debootstrap >/dev/null 2>&1 || skip "debootstrap is not installed (needed to make $BASE without a registry)"
  MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  [ -n "$MIRROR" ] || MIRROR=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [ -n "$MIRROR" ] || skip "no Debian mirror configured for debootstrap"
  if [ ! -f "$CACHE/rootfs/.mcpx-complete" ]; then
    echo "debootstrap --variant=minbase $SUITE from $MIRROR (about 1-2 minutes)" >&2
    rm -rf "$CACHE/rootfs"
    debootstrap --variant=minbase "$SUITE" "$CACHE/rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
      skip "debootstrap failed (see $CACHE/debootstrap.log: $(tail -n1 "$CACHE/debootstrap.log"))"
    touch "$CACHE/rootfs/.mcpx-complete"
  fi
  # Same apt sources as the official image (with updates and security), no
  # package lists, then import as a local image.
  rm -f "$CACHE/rootfs/etc/apt/sources.list"
  mkdir -p "$CACHE/rootfs/etc/apt/sources.list.d"
  cat >"$CACHE/rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$CACHE/rootfs/var/lib/apt/lists/"* "$CACHE/rootfs/var/cache/apt/archives/"*.deb
  tar -C "$CACHE/rootfs" --exclude=./.mcpx-complete -c . |
    "${PODMAN[@]}" import -q --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null ||
    skip "podman import of the debootstrap rootfs failed"
fi

if ! "${PODMAN[@]}" run --rm --network none "$BASE" /bin/true >"$WORK/out" 2>&1; then
  skip "podman cannot run containers here: $(tail -n1 "$WORK/out")"
fi
pass "podman runs containers (runc, $BASE)"

# A wheel (a zip with its dist-info) made here with the standard library, so
# no index or build tool is needed.
make_wheel() { # make_wheel DIR
  /usr/bin/python3 - "$1" <<'PYWHEEL'
import base64, hashlib, os, sys, zipfile
name, ver = "mcpx_demo_wheel", "1.0"
files = {f"{name}/__init__.py": "def hello():\n    return 'hello from a local wheel'\n",
         f"{name}-{ver}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n",
         f"{name}-{ver}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: mcp-exec\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = ""
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record += f"{path},sha256={digest},{len(text.encode())}\n"
record += f"{name}-{ver}.dist-info/RECORD,,\n"
# Fixed times: the same bytes every time, so a rebuild finds its cache.
with zipfile.ZipFile(os.path.join(sys.argv[1], f"{name}-{ver}-py3-none-any.whl"), "w") as z:
    for path, text in list(files.items()) + [(f"{name}-{ver}.dist-info/RECORD", record)]:
        z.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), text)
PYWHEEL
}

# The variant with one small Debian package and that wheel (issue 33 item 7);
# its log in $WORK/variant.log. scripts/test.sh's background build makes it
# right after the standard image, so the check at the end finds it cached.
VARIANT=${IMAGE}-extra
VARIANT_WHEELS=image/wheels-test
build_variant() {
  rm -rf "${ROOT:?}/$VARIANT_WHEELS" && mkdir -p "$ROOT/$VARIANT_WHEELS" &&
    make_wheel "$ROOT/$VARIANT_WHEELS" || return 1
  "${PODMAN[@]}" build --network host --pull=never --build-arg "BASE_IMAGE=$BASE" \
    --build-arg EXTRA_PACKAGES=python3-tabulate --build-arg "WHEELS_DIR=$VARIANT_WHEELS" \
    --build-arg "EXTRA_IMPORTS=tabulate mcpx_demo_wheel" \
    -t "$VARIANT" -f "$ROOT/Dockerfile" "$ROOT" >"$WORK/variant.log" 2>&1
  local rc=$?
  rm -rf "${ROOT:?}/$VARIANT_WHEELS"
  return $rc
}

# ------------------------------------------------------------------ build --
start=$(date +%s)
old_id=$("${PODMAN[@]}" image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null)
if "${PODMAN[@]}" build --network host --pull=never --build-arg "BASE_IMAGE=$BASE" \
  -t "$IMAGE" -f "$ROOT/Dockerfile" "$ROOT" >"$WORK/build.log" 2>&1; then
  pass "podman build $IMAGE ($(($(date +%s) - start)) s)"
  # Drop the image this build replaced (now untagged) so reruns do not pile up.
  if [ -n "$old_id" ] && [ "$old_id" != "$("${PODMAN[@]}" image inspect -f '{{.Id}}' "$IMAGE")" ]; then
    "${PODMAN[@]}" rmi "$old_id" >/dev/null 2>&1 || true
  fi
else
  fail "podman build (last lines of the log below)"
  tail -n 30 "$WORK/build.log" | indent
  echo "$PASS passed, $FAIL failed"
  exit 1
fi

if [ "${MCPX_CONTAINER_BUILD_ONLY:-0}" = 1 ]; then
  # scripts/test.sh builds the image early, in the background, and runs the
  # checks below at its end (when this build is a cache hit); the variant
  # too, so that its check at the end costs seconds.
  if [ "${MCPX_CONTAINER_VARIANT:-1}" = 1 ]; then
    start=$(date +%s)
    build_variant && pass "variant build (python3-tabulate and a wheel, $(($(date +%s) - start)) s)" ||
      { fail "variant build (last lines of the log below)"; tail -n 25 "$WORK/variant.log" | indent; }
  fi
  echo "$PASS passed, $FAIL failed (build only)"
  exit 0
fi

# ------------------------------------------------- image size and content --
size_mb=$("${PODMAN[@]}" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d", $1/1e6}')
max_mb=${MCPX_IMAGE_MAX_MB:-250}
if [ "$size_mb" -le "$max_mb" ]; then
  pass "image size: $size_mb MB (at most $max_mb MB)"
else
  fail "image size: $size_mb MB, above $max_mb MB"
fi
if "${PODMAN[@]}" run --rm --network none --entrypoint /bin/sh "$IMAGE" -c true >"$WORK/out" 2>&1; then
  fail "the image runs /bin/sh"
else
  pass "no shell: --entrypoint /bin/sh cannot start ($(tail -n1 "$WORK/out" | cut -c1-100))"
fi

# --------------------------------------------------------- image metadata --
user=$("${PODMAN[@]}" image inspect -f '{{.Config.User}}' "$IMAGE")
[ "$user" = "65532:65532" ] && pass "image USER 65532:65532" || fail "image USER is '$user'"
ports=$("${PODMAN[@]}" image inspect -f '{{range $p, $_ := .Config.ExposedPorts}}{{$p}} {{end}}' "$IMAGE")
case "$ports" in *8080/tcp*) pass "image EXPOSE 8080" ;; *) fail "image exposes '$ports'" ;; esac
env=$("${PODMAN[@]}" image inspect -f '{{range .Config.Env}}{{.}} {{end}}' "$IMAGE")
missing=""
for e in MCP_EXEC_TRANSPORT=http MCP_EXEC_ADDR=0.0.0.0:8080 MCP_EXEC_PYTHON=/usr/bin/python3; do
  case " $env " in *" $e "*) ;; *) missing="$missing $e" ;; esac
done
[ -z "$missing" ] && pass "image ENV transport/addr/python" || fail "image ENV lacks$missing"

# ------------------------------------------------- the production posture --
HARD=(--read-only --read-only-tmpfs=false --cap-drop ALL --security-opt no-new-privileges
  --user 65532:65532 --tmpfs /tmp)
# OpenShift's restricted-v2 runs pods under a uid from the namespace's range
# with gid 0; nothing in the image may depend on 65532.
ANYUID=(--read-only --read-only-tmpfs=false --cap-drop ALL --security-opt no-new-privileges
  --user 1000770000:0 --tmpfs /tmp)
TOKDIR=$WORK/secret
mkdir -p "$TOKDIR"
head -c 36 /dev/urandom | base64 | tr -d '/+=\n' >"$TOKDIR/token"
chown -R 65532:65532 "$TOKDIR"
chmod 0500 "$TOKDIR"
chmod 0400 "$TOKDIR/token"
TOKMOUNT=(-v "$TOKDIR:/var/run/secrets/mcp-exec:ro" -e MCP_EXEC_AUTH_TOKEN_FILE=/var/run/secrets/mcp-exec/token)
# What the Helm chart sets beyond the image's ENV, and its memory limit.
CHART_ENV=(-e MCP_EXEC_WARM=1 -e MCP_EXEC_PRELOAD=numpy -e MCP_EXEC_REQUIRE_LANDLOCK=1
  -e MCP_EXEC_MEMORY_MB=512 -e MCP_EXEC_LOG_FORMAT=json)
CHART_MEM=(--memory 1536m --memory-swap 1536m)

cat >"$WORK/posture.py" <<'EOF'
import os, sys
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
uid, gid = (int(x) for x in sys.argv[1].split(":"))
checks = {
    f"uid/gid {uid}:{gid}": os.getuid() == uid and os.getgid() == gid and os.getgroups() in ([], [gid]),
    "no capabilities": all(int(status[k], 16) == 0 for k in ("CapPrm", "CapEff", "CapBnd")),
    "no_new_privs": status.get("NoNewPrivs", "").strip() == "1",
}
try:
    open("/usr/local/bin/x", "w")
    checks["root filesystem read-only"] = False
except OSError:
    checks["root filesystem read-only"] = True
for d in ("/var/tmp", "/run", "/", "/usr/local/bin", "/etc"):
    try:
        with open(os.path.join(d, "probe"), "w") as f:
            f.write("x")
        checks[f"{d} not writable"] = False
    except OSError:
        checks[f"{d} not writable"] = True
# bash and coreutils are there for exec's language "bash" (Dockerfile);
# /bin/sh, dash, perl and the package managers never are.
present = [p for p in ("/bin/sh", "/bin/dash", "/usr/bin/perl", "/usr/bin/dpkg", "/usr/bin/apt",
                       "/usr/bin/apt-get", "/usr/bin/busybox") if os.path.lexists(p)]
checks["no /bin/sh, dash, package manager or perl " + " ".join(present)] = not present
checks["bash and its tools for bash runs"] = all(
    os.access(p, os.X_OK) for p in ("/usr/bin/bash", "/usr/bin/jq", "/usr/bin/sqlite3", "/usr/bin/gawk",
                                    "/usr/bin/file", "/usr/bin/find", "/usr/bin/grep", "/usr/bin/sed"))
try:
    with open("/tmp/probe", "w") as f:
        f.write("x")
    os.unlink("/tmp/probe")
    checks["/tmp writable"] = True
except OSError:
    checks["/tmp writable"] = False
setuid = []
for top in ("/usr", "/bin", "/sbin", "/lib"):
    for d, _, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if st.st_mode & 0o6000 and not os.path.islink(p):
                setuid.append(p)
checks["no set-uid/set-gid files"] = not setuid
import subprocess
langs = ["bash"] + (["javascript"] if os.access("/usr/bin/node", os.X_OK) else [])
r = subprocess.run([sys.executable, "/image-check.py"] + langs, capture_output=True, text=True)
checks["scripts/image-check.py: numpy, pandas, matplotlib (PNG/PDF/SVG), Pillow, yaml, jinja2, tz, CA bundle, "
       + " and ".join(langs)] = r.returncode == 0 and "image-check: ok" in r.stdout
for k, v in checks.items():
    print(("ok   " if v else "FAIL ") + k)
sys.exit(0 if all(checks.values()) else 1)
EOF
for who in 65532:65532 1000770000:0; do
  posture=("${HARD[@]}")
  [ "$who" = 65532:65532 ] || posture=("${ANYUID[@]}")
  "${PODMAN[@]}" run --rm "${posture[@]}" --network none -v "$WORK/posture.py:/posture.py:ro" \
    -v "$ROOT/scripts/image-check.py:/image-check.py:ro" \
    --entrypoint /usr/bin/python3 "$IMAGE" /posture.py "$who" >"$WORK/out" 2>&1
  while read -r st what; do
    [ "$st" = ok ] && pass "inside the hardened container ($who): $what" ||
      fail "inside the hardened container ($who): $what"
  done < <(grep -E '^(ok|FAIL) ' "$WORK/out")
  grep -qE '^(ok|FAIL) ' "$WORK/out" || { fail "posture probe did not run as $who"; indent <"$WORK/out"; }
done

if "${PODMAN[@]}" run --rm "${HARD[@]}" --network none "${TOKMOUNT[@]}" "${CHART_ENV[@]}" "${CHART_MEM[@]}" "$IMAGE" --check-config \
  >"$WORK/check-config" 2>&1; then
  pass "mcp-exec --check-config in the hardened container (output below)"
else
  fail "mcp-exec --check-config exited non-zero"
fi
indent <"$WORK/check-config"
grep -q 'MCP_EXEC_TRANSPORT=http' "$WORK/check-config" && grep -q 'MCP_EXEC_AUTH_TOKEN_FILE=/var/run/secrets/mcp-exec/token' "$WORK/check-config" &&
  ! grep -qF "$(cat "$TOKDIR/token")" "$WORK/check-config" &&
  pass "--check-config shows http + the token file and does not print the token" ||
  fail "--check-config output lacks the transport/token file, or shows the token"

# -------------------------------------------------------- server + client --
if ! "${PODMAN[@]}" run -d --name "$NAME" "${HARD[@]}" --network none "${TOKMOUNT[@]}" "${CHART_ENV[@]}" \
  "${CHART_MEM[@]}" "$IMAGE" >"$WORK/out" 2>&1; then
  fail "start the server container"
  indent <"$WORK/out"
  echo "$PASS passed, $FAIL failed"
  exit 1
fi
# A sibling container in the server's network namespace (which has only lo):
# the client reaches 127.0.0.1:8080 and nothing else.
SIB=(--rm "${HARD[@]}" --network "container:$NAME" -v "$TOKDIR:/token:ro")
ready=0
for _ in $(seq 1 60); do
  if "${PODMAN[@]}" run "${SIB[@]}" --entrypoint /usr/bin/python3 "$IMAGE" -c \
    'import urllib.request as u; u.urlopen("http://127.0.0.1:8080/readyz", timeout=2)' >/dev/null 2>&1; then
    ready=1
    break
  fi
  [ "$("${PODMAN[@]}" inspect -f '{{.State.Running}}' "$NAME" 2>/dev/null)" = true ] || break
  sleep 1
done
if [ "$ready" = 1 ]; then
  pass "server is ready (/readyz) in the hardened container"
else
  fail "server did not become ready (logs below)"
  "${PODMAN[@]}" logs "$NAME" 2>&1 | tail -n 30 | indent
fi

client() { # client OUTFILE ARGS... -> exit code of mcp-exec-client
  local out=$1
  shift
  "${PODMAN[@]}" run "${SIB[@]}" --entrypoint /usr/local/bin/mcp-exec-client "$IMAGE" "$@" >"$out" 2>&1
}
URL=http://127.0.0.1:8080/mcp
call() { # call OUTFILE CODE
  client "$1" call --url "$URL" --token-file /token/token --timeout 60 --code "$2"
}

if [ "$ready" = 1 ]; then
  client "$WORK/o" probe --url http://127.0.0.1:8080 && pass "mcp-exec-client probe" ||
    { fail "mcp-exec-client probe"; indent <"$WORK/o"; }

  call "$WORK/o" 'print(6*7)'
  rc=$?
  [ "$rc" = 0 ] && [ "$(cat "$WORK/o")" = 42 ] && pass "exec print(6*7) -> 42, exit 0" ||
    { fail "exec print(6*7): exit $rc"; indent <"$WORK/o"; }

  call "$WORK/o" 'import sys; print("bye"); sys.exit(3)'
  rc=$?
  [ "$rc" = 3 ] && grep -q bye "$WORK/o" && pass "exec sys.exit(3) -> exit 3 with output" ||
    { fail "exec sys.exit(3): exit $rc"; indent <"$WORK/o"; }

  client "$WORK/o" call --url "$URL" --timeout 30 --code 'print(1)'
  rc=$?
  [ "$rc" != 0 ] && pass "a call without the token is refused (exit $rc: $(head -c 100 "$WORK/o" | tr '\n' ' '))" ||
    { fail "a call without the token succeeded"; indent <"$WORK/o"; }

  call "$WORK/o" 'import numpy, pandas, yaml, jinja2, PIL.Image
import matplotlib; matplotlib.use("Agg"); import matplotlib.pyplot as plt
plt.plot([1, 2, 3]); plt.savefig("plot.png")
print("libs", int(numpy.arange(4).sum()), len(pandas.DataFrame({"a": [1, 2]})), PIL.Image.open("plot.png").format)'
  rc=$?
  [ "$rc" = 0 ] && grep -q 'libs 6 2 PNG' "$WORK/o" && pass "exec with numpy, pandas, matplotlib (savefig), yaml, jinja2, PIL" ||
    { fail "exec with the libraries: exit $rc"; indent <"$WORK/o"; }

  call "$WORK/o" 'import socket
try:
    socket.create_connection(("127.0.0.1", 8080), timeout=2); print("connected")
except OSError as e:
    print("blocked", type(e).__name__)'
  grep -q '^blocked' "$WORK/o" && pass "run code cannot open a TCP connection to the server ($(head -n1 "$WORK/o"))" ||
    { fail "run code reached the server over TCP"; indent <"$WORK/o"; }

  call "$WORK/o" 'try:
    open("/usr/local/bin/pwned", "w"); print("wrote")
except OSError as e:
    print("denied", type(e).__name__)'
  grep -q '^denied' "$WORK/o" && pass "run code cannot write outside its workdir ($(head -n1 "$WORK/o"))" ||
    { fail "run code wrote to /usr/local/bin"; indent <"$WORK/o"; }

  call "$WORK/o" 'b = bytearray(700 * 1024 * 1024); print("allocated")'
  rc=$?
  if [ "$rc" != 0 ] && grep -q MemoryError "$WORK/o" && client "$WORK/p" probe --url http://127.0.0.1:8080; then
    pass "a 700 MiB allocation fails in the run (MCP_EXEC_MEMORY_MB=512), the server stays ready"
  else
    fail "memory limit: exit $rc"
    indent <"$WORK/o"
  fi

  # Run code shares the server's uid; Landlock confines its reads to the
  # runtime's directories, so the mounted token must be unreadable.
  call "$WORK/o" 'try:
    open("/var/run/secrets/mcp-exec/token").read(); print("READABLE")
except OSError as e:
    print("denied", type(e).__name__)'
  if grep -q '^denied' "$WORK/o"; then
    pass "run code cannot read the mounted token file ($(head -n1 "$WORK/o"))"
  else
    fail "run code CAN read the mounted token file (is Landlock active? see docs/deployment.md)"
  fi
fi

if [ "$FAIL" -ne 0 ]; then
  echo "server log (last 20 lines):"
  "${PODMAN[@]}" logs "$NAME" 2>&1 | tail -n 20 | indent
fi
"${PODMAN[@]}" rm -f -t 0 "$NAME" >/dev/null 2>&1

# ---------------------------------------------------- an arbitrary uid ----
# The server as OpenShift would run it: a uid the image does not know, gid 0,
# the token readable through its group (the chart's fsGroup / the SCC's).
ANYTOK=$WORK/anysecret
mkdir -p "$ANYTOK"
cp "$TOKDIR/token" "$ANYTOK/token"
chown -R 0:0 "$ANYTOK"
chmod 0550 "$ANYTOK"
chmod 0440 "$ANYTOK/token"
if "${PODMAN[@]}" run -d --name "$NAME" "${ANYUID[@]}" --network none \
  -v "$ANYTOK:/var/run/secrets/mcp-exec:ro" -e MCP_EXEC_AUTH_TOKEN_FILE=/var/run/secrets/mcp-exec/token \
  "${CHART_ENV[@]}" "${CHART_MEM[@]}" "$IMAGE" >"$WORK/out" 2>&1; then
  SIB=(--rm "${ANYUID[@]}" --network "container:$NAME" -v "$ANYTOK:/token:ro")
  ok_any=0
  for _ in $(seq 1 60); do
    if call "$WORK/o" 'import os; print(os.getuid(), os.getgid(), 6*7)' && [ "$(cat "$WORK/o")" = "1000770000 0 42" ]; then
      ok_any=1
      break
    fi
    [ "$("${PODMAN[@]}" inspect -f '{{.State.Running}}' "$NAME" 2>/dev/null)" = true ] || break
    sleep 1
  done
  if [ "$ok_any" = 1 ]; then
    pass "as uid 1000770000, gid 0: the server starts and runs code (output: $(cat "$WORK/o"))"
  else
    fail "as uid 1000770000, gid 0: no answer"
    indent <"$WORK/o"
    "${PODMAN[@]}" logs "$NAME" 2>&1 | tail -n 20 | indent
  fi
  "${PODMAN[@]}" rm -f -t 0 "$NAME" >/dev/null 2>&1
else
  fail "start the server as uid 1000770000, gid 0"
  indent <"$WORK/out"
fi

# ------------------------------------- memory bursts under the pod's limit --
# Issue 23: with per-run cgroups unavailable (a pod), the run budget is a
# watchdog reading; 16 x 100 MiB and 32 x 60 MiB forked processes used to
# take the container to its limit and the kernel's OOM killer into it. Now
# the server also watches the container's own memory cgroup and ends the run
# before the kernel would. Each burst must end with the memory limit, the
# container's cgroup must show no OOM kill, and the next call must be served:
# under the chart's limit (1536Mi) and under the old 1 GiB, below the chart's
# memory sum, where only the container watch can stop the burst in time.
# Calls go through `podman exec` into the server's own container.
xcall() { # xcall CONTAINER OUTFILE CODE [TIMEOUT]
  "${PODMAN[@]}" exec "$1" /usr/local/bin/mcp-exec-client call --url "$URL" \
    --token-file /var/run/secrets/mcp-exec/token --timeout "${4:-60}" --code "$3" >"$2" 2>&1
}
xready() { # xready CONTAINER: 0 once /readyz answers (at most 90 tries)
  for _ in $(seq 1 90); do
    "${PODMAN[@]}" exec "$1" /usr/bin/python3 -c \
      'import urllib.request as u; u.urlopen("http://127.0.0.1:8080/readyz", timeout=2)' >/dev/null 2>&1 && return 0
    [ "$("${PODMAN[@]}" inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ] || return 1
    sleep 1
  done
  return 1
}
oom_kills() { # oom_kills CONTAINER: the oom_kill count of its memory cgroup (v2 memory.events, v1 memory.oom_control)
  local id dir
  id=$("${PODMAN[@]}" inspect -f '{{.Id}}' "$1")
  dir=$(find /sys/fs/cgroup/memory /sys/fs/cgroup -maxdepth 4 -type d -name "*$id*" 2>/dev/null | head -n1)
  if [ -f "$dir/memory.events" ]; then
    awk '$1 == "oom_kill" {print $2}' "$dir/memory.events"
  elif [ -f "$dir/memory.oom_control" ]; then
    awk '$1 == "oom_kill" {print $2}' "$dir/memory.oom_control"
  fi
}
burst_code() { # burst_code N MIB
  cat <<PYCODE
import os, time
r, w = os.pipe()
for i in range($1):
    if os.fork() == 0:
        os.close(r)
        b = bytearray(b'\x01') * ($2 << 20)
        os.write(w, b'.')
        time.sleep(3600)
        os._exit(0)
os.close(w)
got = 0
while got < $1:
    got += len(os.read(r, 64))
print('all allocated', flush=True)
time.sleep(3600)
PYCODE
}
for lim in 1536m 1g; do
  BN=$NAME-burst
  # Started from $WORK: conmon stays in the directory podman ran in and
  # writes an empty file named oom there when the container's memory
  # cgroup reports an OOM (it landed in the repository's root before).
  if ! (cd "$WORK" && exec "${PODMAN[@]}" run -d --name "$BN" "${HARD[@]}" --network none "${TOKMOUNT[@]}" "${CHART_ENV[@]}" \
    --memory "$lim" --memory-swap "$lim" "$IMAGE") >"$WORK/out" 2>&1 || ! xready "$BN"; then
    fail "start the server under a $lim memory limit"
    indent <"$WORK/out"
    "${PODMAN[@]}" logs "$BN" 2>&1 | tail -n 20 | indent
    "${PODMAN[@]}" rm -f -t 0 "$BN" >/dev/null 2>&1
    continue
  fi
  watched=$("${PODMAN[@]}" logs "$BN" 2>&1 | grep -o "the container's memory is watched ([^)]*)" | head -n1)
  if [ -n "$watched" ]; then
    pass "[$lim] the server watches its container's memory: $watched"
  else
    fail "[$lim] the server does not watch its container's memory"
    "${PODMAN[@]}" logs "$BN" 2>&1 | grep -i "container's memory" | head -n 5 | indent
  fi
  before=$(oom_kills "$BN")
  for nm in "16 100" "32 60"; do
    n=${nm% *} mb=${nm#* }
    for try in 1 2 3; do
      xcall "$BN" "$WORK/o" "$(burst_code "$n" "$mb")" 60
      after=$(oom_kills "$BN")
      if grep -q "(memory limit)" "$WORK/o" && ! grep -q "all allocated" "$WORK/o" &&
        [ -n "$before" ] && [ "$after" = "$before" ] && xcall "$BN" "$WORK/p" 'print(6*7)' &&
        [ "$(cat "$WORK/p")" = 42 ]; then
        pass "[$lim] burst $n x $mb MiB (try $try): ended at the memory limit, no kernel OOM kill (oom_kill $before -> $after), the next call served"
      elif [ "$lim" = 1g ] && grep -q "(memory limit)" "$WORK/o" && ! grep -q "all allocated" "$WORK/o" &&
        xcall "$BN" "$WORK/p" 'print(6*7)' && [ "$(cat "$WORK/p")" = 42 ]; then
        # 1 GiB is below the sum the chart requires (docs/deployment.md,
        # Sizing): the container watch is a second line there, not a
        # promise. Said, and the server must still serve the next call.
        pass "[$lim] burst $n x $mb MiB (try $try), below the chart's sizing: the server still serves the next call (oom_kill $before -> $after: the kernel ended some of the burst's processes before a reading did)"
        before=$after
      else
        fail "[$lim] burst $n x $mb MiB (try $try): oom_kill '$before' -> '$after'"
        indent <"$WORK/o"
        "${PODMAN[@]}" logs "$BN" 2>&1 | tail -n 8 | indent
      fi
    done
  done
  # What stopped each burst: the run's budget or the container watch.
  "${PODMAN[@]}" logs "$BN" 2>&1 | grep -oE "passed its memory budget \([0-9]+ KiB[^)]*\)" | sed "s/^/[$lim] /" | indent
  "${PODMAN[@]}" rm -f -t 0 "$BN" >/dev/null 2>&1
done

# ------------------------------------------- two replicas on one node ----
# Issue 23: RLIMIT_NPROC counts every task of the uid, so without user
# namespaces replica A's run holding 51 sleeping children made replica B's
# run fail with fork: EAGAIN. With a user namespace per pod (hostUsers:
# false; here podman's --uidmap, each container its own host range, as
# --userns=auto would pick) the kernel counts per user namespace and B's run
# forks freely. The control, both replicas under one host uid without user
# namespaces, must reproduce the failure (uid 40000, so that nothing else on
# this host is disturbed).
HOLD='import os, time
for i in range(51):
    if os.fork() == 0:
        time.sleep(120)
        os._exit(0)
print("holding", flush=True)
time.sleep(120)'
FORK40='import os, time
kids = []
for i in range(40):
    pid = os.fork()
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
for p in kids:
    os.waitpid(p, 0)
print("forked", len(kids))'
start_replica() { # start_replica NAME HOSTUID RUN-ARGS...: the server, its token owned by HOSTUID
  local name=$1 uid=$2 tok=$WORK/tok-$1
  shift 2
  mkdir -p "$tok" && cp "$TOKDIR/token" "$tok/token" && chown -R "$uid:$uid" "$tok" &&
    chmod 0500 "$tok" && chmod 0400 "$tok/token"
  "${PODMAN[@]}" run -d --name "$name" --read-only --read-only-tmpfs=false --cap-drop ALL \
    --security-opt no-new-privileges --tmpfs /tmp --network none "$@" \
    -v "$tok:/var/run/secrets/mcp-exec:ro" -e MCP_EXEC_AUTH_TOKEN_FILE=/var/run/secrets/mcp-exec/token \
    "${CHART_ENV[@]}" "${CHART_MEM[@]}" "$IMAGE" >"$WORK/out" 2>&1 && xready "$name"
}
pair() { # pair LABEL EXPECT(ok|fail) HOSTUID-A ARGS-A HOSTUID-B ARGS-B (ARGS: one string, split on spaces)
  local label=$1 expect=$2 ua=$3 aa=$4 ub=$5 ba=$6 A=$NAME-a B=$NAME-b
  # shellcheck disable=SC2086
  if ! start_replica "$A" "$ua" $aa || ! start_replica "$B" "$ub" $ba; then
    fail "$label: start the replicas"
    indent <"$WORK/out"
    "${PODMAN[@]}" logs "$A" 2>&1 | tail -n 10 | indent
    "${PODMAN[@]}" logs "$B" 2>&1 | tail -n 10 | indent
    "${PODMAN[@]}" rm -f -t 0 "$A" "$B" >/dev/null 2>&1
    return
  fi
  # A's next warm interpreter is prepared after B has started: its process
  # limit counts B's processes of a shared uid as they are now.
  xcall "$A" "$WORK/warm" 'print(1)' 30 >/dev/null 2>&1 || true
  xcall "$A" "$WORK/hold" "$HOLD" 150 &
  local holder=$! held=0 rc
  for _ in $(seq 1 60); do
    [ "$(pgrep -c -u "$ua" 2>/dev/null)" -ge 52 ] 2>/dev/null && { held=1; break; }
    sleep 1
  done
  if [ $held = 1 ]; then
    xcall "$B" "$WORK/o" "$FORK40" 60
    rc=$?
    if [ "$expect" = ok ] && [ $rc = 0 ] && grep -q "^forked 40" "$WORK/o"; then
      pass "$label: replica A's run holds its children ($(pgrep -c -u "$ua") tasks of host uid $ua); replica B's run (host uid $ub) forks 40"
    elif [ "$expect" = fail ] && [ $rc != 0 ]; then
      pass "$label: replica B's run fails while replica A's holds its children, as issue 23 found ($(grep -m1 -E 'Error|limit' "$WORK/o" | cut -c1-100))"
    else
      fail "$label: replica B's run exited $rc, expected $expect"
      indent <"$WORK/o"
    fi
  else
    fail "$label: replica A's run did not reach 52 tasks of host uid $ua"
    indent <"$WORK/hold"
  fi
  "${PODMAN[@]}" rm -f -t 0 "$A" "$B" >/dev/null 2>&1
  wait "$holder" 2>/dev/null
}
pair "two replicas, a user namespace each (--uidmap, as hostUsers: false)" ok \
  165532 "--user 65532:65532 --uidmap 0:100000:65536 --gidmap 0:100000:65536" \
  265532 "--user 65532:65532 --uidmap 0:200000:65536 --gidmap 0:200000:65536"
pair "control: two replicas sharing host uid 40000, no user namespaces" fail \
  40000 "--user 40000:40000" 40000 "--user 40000:40000"

# ------------------------------------------- the gVisor and variant steps --
# Defined here, run at the end (after the escape suites under runc).
gvisor_section() {
  local GV=(podman --runtime "$RUNSC_BIN" --runtime-flag network=none) gvn=$NAME-gvisor out
  local ver
  ver=$("$RUNSC_BIN" --version | head -n1)
  "${GV[@]}" run --rm "${HARD[@]}" --network none "${TOKMOUNT[@]}" "${CHART_ENV[@]}" "$IMAGE" \
    --check-config >"$WORK/gv-check" 2>&1
  local rc=$?
  if [ $rc = 0 ] && grep -q "^runtime: gvisor (seen" "$WORK/gv-check" &&
    grep -q "^self-test: passed" "$WORK/gv-check" && grep -q "landlock: absent" "$WORK/gv-check" &&
    grep -q "seccomp: holds" "$WORK/gv-check"; then
    pass "[gVisor, $ver] --check-config: runtime gvisor seen, seccomp holds, Landlock absent and accepted with MCP_EXEC_REQUIRE_LANDLOCK=1, self-test passed"
  else
    fail "[gVisor, $ver] --check-config (exit $rc)"
    grep -E "runtime|seccomp|landlock|self-test|REFUSED|FAILED" "$WORK/gv-check" | indent
  fi
  if ! "${GV[@]}" run -d --name "$gvn" "${HARD[@]}" --network none "${TOKMOUNT[@]}" "${CHART_ENV[@]}" \
    "${CHART_MEM[@]}" "$IMAGE" >"$WORK/out" 2>&1 || ! gv_ready "$gvn"; then
    fail "[gVisor] start the server container"
    indent <"$WORK/out"
    "${GV[@]}" logs "$gvn" 2>&1 | tail -n 20 | indent
  else
    pass "[gVisor] the server is ready (/readyz) in the hardened container"
    gv_call "$gvn" "$WORK/o" 'print(6*7)'
    [ "$(cat "$WORK/o")" = 42 ] && pass "[gVisor] exec print(6*7) -> 42" ||
      { fail "[gVisor] exec print(6*7)"; indent <"$WORK/o"; }
    gv_call "$gvn" "$WORK/o" 'import socket
try:
    socket.create_connection(("127.0.0.1", 8080), timeout=2); print("connected")
except OSError as e:
    print("blocked", type(e).__name__)'
    grep -q '^blocked' "$WORK/o" && pass "[gVisor] run code cannot open a TCP connection to the server ($(head -n1 "$WORK/o"))" ||
      { fail "[gVisor] run code reached the server over TCP"; indent <"$WORK/o"; }
    gv_call "$gvn" "$WORK/o" 'b = bytearray(700 * 1024 * 1024); print("allocated")'
    grep -q MemoryError "$WORK/o" && ! grep -q '^allocated' "$WORK/o" &&
      pass "[gVisor] a 700 MiB allocation fails in the run (MCP_EXEC_MEMORY_MB=512)" ||
      { fail "[gVisor] memory limit"; indent <"$WORK/o"; }
    # gVisor has no Landlock: each run's filesystem view (fs_view.c) holds
    # the runtime and its workdir only, so the mounted token is not there.
    gv_call "$gvn" "$WORK/o" 'try:
    open("/var/run/secrets/mcp-exec/token").read(); print("READABLE")
except OSError as e:
    print("denied", type(e).__name__)'
    grep -q '^denied' "$WORK/o" &&
      pass "[gVisor] run code cannot read the mounted token file: it is not in the run's filesystem view ($(head -n1 "$WORK/o"))" ||
      { fail "[gVisor] the token file probe"; indent <"$WORK/o"; }
    out=$("${GV[@]}" logs "$gvn" 2>&1 | grep -o '"msg":"Landlock is unavailable under gvisor[^"]*' | head -c 120)
    [ -n "$out" ] && pass "[gVisor] the server's log says what replaces Landlock (${out#\"msg\":\"})" ||
      fail "[gVisor] no word about Landlock in the server's log"
  fi
  "${GV[@]}" rm -f -t 0 "$gvn" >/dev/null 2>&1
  for suite in "test_escape.py auto" "test_escape_lang.py auto"; do
    set -- $suite
    if "${GV[@]}" run --rm "${HARD[@]}" --network none --memory 1g \
      -v "$ROOT/tests:/src/tests:ro" -w /tmp \
      -e MCPX_BIN=/usr/local/bin/mcp-exec -e MCPX_TEST_WARM=$2 -e PYTHONDONTWRITEBYTECODE=1 \
      --entrypoint /usr/bin/python3 "$IMAGE" "/src/tests/e2e/$1" >"$WORK/escape" 2>&1; then
      pass "[gVisor] $1 inside the container (MCP_EXEC_WARM=$2): $(tail -n1 "$WORK/escape"), $(grep -c '^ok .*\[gVisor\]' "$WORK/escape") gVisor differences asserted"
    else
      fail "[gVisor] $1 inside the container (MCP_EXEC_WARM=$2)"
      grep -v '^ok ' "$WORK/escape" | tail -n 30 | indent
    fi
  done
}
gv_ready() { # gv_ready CONTAINER: 0 once /readyz answers inside it
  for _ in $(seq 1 90); do
    podman --runtime "$RUNSC_BIN" exec "$1" /usr/bin/python3 -c \
      'import urllib.request as u; u.urlopen("http://127.0.0.1:8080/readyz", timeout=2)' >/dev/null 2>&1 && return 0
    [ "$(podman inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ] || return 1
    sleep 1
  done
  return 1
}
gv_call() { # gv_call CONTAINER OUTFILE CODE: mcp-exec-client inside the container
  podman --runtime "$RUNSC_BIN" exec "$1" /usr/local/bin/mcp-exec-client call --url "$URL" \
    --token-file /var/run/secrets/mcp-exec/token --timeout 60 --code "$3" >"$2" 2>&1
}

variant_section() {
  local start base_mb var_mb
  start=$(date +%s)
  # The assembly's image-check imports both or fails the build (a cached
  # build ran it when it was made).
  if build_variant; then
    pass "variant build with EXTRA_PACKAGES=python3-tabulate and a local wheel ($(($(date +%s) - start)) s, $(grep -c 'Using cache' "$WORK/variant.log") cached steps); image-check imported both"
  else
    fail "variant build with extra packages (last lines of the log below)"
    tail -n 25 "$WORK/variant.log" | indent
    return
  fi
  base_mb=$("${PODMAN[@]}" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d", $1/1e6}')
  var_mb=$("${PODMAN[@]}" image inspect -f '{{.Size}}' "$VARIANT" | awk '{printf "%d", $1/1e6}')
  if printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
      '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"code":"import tabulate, mcpx_demo_wheel\nprint(mcpx_demo_wheel.hello(), tabulate.tabulate([[6, 7]], tablefmt=\"plain\"))"}}}' |
    "${PODMAN[@]}" run --rm -i "${HARD[@]}" --network none -e MCP_EXEC_TRANSPORT=stdio -e MCP_EXEC_WARM=0 \
      "$VARIANT" 2>/dev/null | grep -q 'hello from a local wheel 6  7'; then
    pass "a run in the variant imports the extra package and the wheel ($base_mb MB -> $var_mb MB)"
  else
    fail "a run in the variant could not import the extras"
  fi
  "${PODMAN[@]}" rmi -f "$VARIANT" >/dev/null 2>&1
}

# ------------------------------------------------- the escape suite inside --
# tests/e2e/test_escape.py (Python) and test_escape_lang.py (bash; its
# JavaScript probes where the image has Node.js) drive the image's own
# mcp-exec (stdio) from the image's python3, inside the hardened container:
# Python warm and cold, the other languages (always cold) once.
for suite in "test_escape.py auto" "test_escape.py 0" "test_escape_lang.py auto"; do
  set -- $suite
  if "${PODMAN[@]}" run --rm "${HARD[@]}" --network none --memory 1g \
    -v "$ROOT/tests:/src/tests:ro" -w /tmp \
    -e MCPX_BIN=/usr/local/bin/mcp-exec -e MCPX_TEST_WARM=$2 -e PYTHONDONTWRITEBYTECODE=1 \
    --entrypoint /usr/bin/python3 "$IMAGE" "/src/tests/e2e/$1" >"$WORK/escape" 2>&1; then
    pass "$1 inside the container (MCP_EXEC_WARM=$2): $(tail -n1 "$WORK/escape")"
  else
    fail "$1 inside the container (MCP_EXEC_WARM=$2)"
    grep -v '^ok ' "$WORK/escape" | tail -n 30 | indent
  fi
done
# ------------------------------------------------ under gVisor (runsc) ----
# Issue 33: the same image in the same posture under podman's --runtime runsc
# (with runsc's own --network=none): --check-config names gVisor and passes
# with the chart's MCP_EXEC_REQUIRE_LANDLOCK=1, the server serves (calls go
# through podman exec: two gVisor sandboxes share no network namespace), and
# the escape suites pass inside, each gVisor difference asserted as such.
RUNSC_BIN=$(command -v runsc || true)
if [ -z "$RUNSC_BIN" ] && [ "${MCPX_CONTAINER_INSTALL:-0}" = 1 ]; then
  bash "$ROOT/scripts/deps.sh" --gvisor >"$WORK/out" 2>&1 || indent <"$WORK/out"
  RUNSC_BIN=$(command -v runsc || true)
fi
if [ "${MCPX_CONTAINER_GVISOR:-1}" != 1 ]; then
  echo "skip gVisor (MCPX_CONTAINER_GVISOR=${MCPX_CONTAINER_GVISOR})"
elif [ -z "$RUNSC_BIN" ]; then
  echo "skip gVisor: runsc is not installed (bash scripts/deps.sh --gvisor)"
else
  gv_start=$(date +%s)
  gvisor_section
  echo "gVisor steps: $(($(date +%s) - gv_start)) s"
fi

# ------------------------------------------- a variant with own packages ----
# Issue 33 item 7: the image with one small Debian package and one local
# wheel added by build arguments; the build reuses every cached layer up to
# the extras' own step, and scripts/image-check.py imports both in the
# assembled tree (the build fails if it cannot).
if [ "${MCPX_CONTAINER_VARIANT:-1}" = 1 ]; then
  var_start=$(date +%s)
  variant_section
  echo "variant steps: $(($(date +%s) - var_start)) s"
else
  echo "skip the variant build (MCPX_CONTAINER_VARIANT=${MCPX_CONTAINER_VARIANT})"
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]

#!/usr/bin/env bash
# scripts/container-test.sh - build the mcp-exec image with rootful podman and
# test it in the production posture:
#
#   --read-only --cap-drop ALL --security-opt no-new-privileges
#   --user 65532:65532 --tmpfs /tmp   (and --network none)
#
# 1. a Debian bookworm base image made locally with debootstrap (no registry
#    needed), imported as localhost/mcpx-debian-minbase:bookworm and cached;
# 2. podman build of ./Dockerfile on that base;
# 3. the image's metadata (user, port, env), the runtime posture seen from
#    inside (uid, capabilities, no_new_privs, read-only root, writable /tmp,
#    no set-uid files, the Python libraries), `mcp-exec --check-config`;
# 4. the server started detached with the token mounted read-only like the
#    chart does, and mcp-exec-client calls from a sibling container sharing
#    its network namespace: output, exit codes, auth, sandbox probes.
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

# ------------------------------------------------------------------ build --
start=$(date +%s)
old_id=$("${PODMAN[@]}" image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null)
if "${PODMAN[@]}" build --network host --pull=never --build-arg "BASE_IMAGE=$BASE" \
  -t "$IMAGE" -f "$ROOT/Dockerfile" "$ROOT" >"$WORK/build.log" 2>&1; then
  pass "podman build $IMAGE ($(($(date +%s) - start)) s, $("${PODMAN[@]}" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d MB", $1/1e6}'))"
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
HARD=(--read-only --cap-drop ALL --security-opt no-new-privileges --user 65532:65532 --tmpfs /tmp)
TOKDIR=$WORK/secret
mkdir -p "$TOKDIR"
head -c 36 /dev/urandom | base64 | tr -d '/+=\n' >"$TOKDIR/token"
chown -R 65532:65532 "$TOKDIR"
chmod 0500 "$TOKDIR"
chmod 0400 "$TOKDIR/token"
TOKMOUNT=(-v "$TOKDIR:/var/run/secrets/mcp-exec:ro" -e MCP_EXEC_AUTH_TOKEN_FILE=/var/run/secrets/mcp-exec/token)
# What the Helm chart sets beyond the image's ENV, and its memory limit.
CHART_ENV=(-e MCP_EXEC_WARM=1 -e MCP_EXEC_PRELOAD=numpy
  -e MCP_EXEC_MEMORY_MB=512 -e MCP_EXEC_LOG_FORMAT=json --memory 1g)

cat >"$WORK/posture.py" <<'EOF'
import os, sys
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
checks = {
    "uid/gid 65532": os.getuid() == 65532 and os.getgid() == 65532 and os.getgroups() in ([], [65532]),
    "no capabilities": all(int(status[k], 16) == 0 for k in ("CapPrm", "CapEff", "CapBnd")),
    "no_new_privs": status.get("NoNewPrivs", "").strip() == "1",
}
try:
    open("/usr/local/bin/x", "w")
    checks["root filesystem read-only"] = False
except OSError:
    checks["root filesystem read-only"] = True
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
try:
    import numpy, pandas, matplotlib, yaml, jinja2, PIL
    checks["numpy pandas matplotlib yaml jinja2 PIL import"] = True
except Exception as e:
    checks[f"library import ({e})"] = False
for k, v in checks.items():
    print(("ok   " if v else "FAIL ") + k)
sys.exit(0 if all(checks.values()) else 1)
EOF
"${PODMAN[@]}" run --rm "${HARD[@]}" --network none -v "$WORK/posture.py:/posture.py:ro" \
  --entrypoint /usr/bin/python3 "$IMAGE" /posture.py >"$WORK/out" 2>&1
while read -r st what; do
  [ "$st" = ok ] && pass "inside the hardened container: $what" || fail "inside the hardened container: $what"
done < <(grep -E '^(ok|FAIL) ' "$WORK/out")
grep -qE '^(ok|FAIL) ' "$WORK/out" || { fail "posture probe did not run"; indent <"$WORK/out"; }

if "${PODMAN[@]}" run --rm "${HARD[@]}" --network none "${TOKMOUNT[@]}" "${CHART_ENV[@]}" "$IMAGE" --check-config \
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
  "$IMAGE" >"$WORK/out" 2>&1; then
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
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]

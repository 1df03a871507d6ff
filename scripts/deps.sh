#!/usr/bin/env bash
# Installs the Debian packages mcp-exec needs to build, run and test.
# Idempotent: packages already present are not reinstalled. Needs root (or sudo).
#
#   --test    also what the tests need (clang for the fuzzers, npm, ...)
#   --gvisor  only gVisor's runsc, for the gVisor pass (tests labelled
#             gvisor): the newest Debian offers for bookworm, from
#             bookworm-backports (0.0~20240729 there; bookworm itself has
#             0.0~20221219). The backports suite is added pinned so that
#             nothing but runsc ever comes from it. MCPX_RUNSC_SUITE=bookworm
#             installs bookworm's own instead.
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# The mirror this machine already uses for bookworm (as scripts/container-
# test.sh finds it), else Debian's own.
debian_mirror() {
  local m
  m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$m" ] || m=$(awk '/^deb .*bookworm/{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  echo "${m:-http://deb.debian.org/debian}"
}

install_runsc() {
  local suite=${MCPX_RUNSC_SUITE:-bookworm-backports} have
  have=$(dpkg-query -W -f='${Status} ${Version}' runsc 2>/dev/null || true)
  case "$suite:$have" in
    bookworm-backports:"install ok installed "*bpo*) return 0 ;;
    bookworm:"install ok installed "*bpo*) ;;
    bookworm:"install ok installed "*) return 0 ;;
  esac
  if [ "$suite" = bookworm-backports ]; then
    printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
      "$(debian_mirror)" /usr/share/keyrings/debian-archive-keyring.gpg |
      $SUDO tee /etc/apt/sources.list.d/mcpx-bookworm-backports.sources >/dev/null
    # Nothing is ever installed from backports unless asked; runsc alone
    # follows it.
    printf 'Package: *\nPin: release n=bookworm-backports\nPin-Priority: -10\n\n%s\n' \
      'Package: runsc
Pin: release n=bookworm-backports
Pin-Priority: 500' | $SUDO tee /etc/apt/preferences.d/mcpx-runsc >/dev/null
  fi
  echo "deps: installing runsc from $suite" >&2
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    --allow-downgrades "runsc/$suite" >/dev/null
  runsc --version | head -n1 >&2
}

if [ "${1:-}" = --gvisor ]; then
  install_runsc
  exit 0
fi

BUILD="build-essential cmake pkg-config libwebsockets-dev libcjson-dev libseccomp-dev libssl-dev libcurl4-openssl-dev libpcre2-dev libhiredis-dev libpython3-dev"
RUNTIME="python3 python3-numpy python3-pandas python3-matplotlib python3-yaml python3-jinja2 python3-pil"
# exec's other languages (MCP_EXEC_LANGUAGES): bash with the tools a bash run
# is offered, and Debian's Node.js for JavaScript, as the image ships them.
LANGUAGES="bash coreutils grep sed gawk findutils jq sqlite3 file nodejs"
# clang and its runtime (libclang_rt.fuzzer, ASan, UBSan) build the libFuzzer
# harnesses that scripts/fuzz.sh runs; redis-server is the Redis store the
# store's tests start on loopback (its service is not started: tests run
# their own, by pid).
TEST="nodejs npm unzip clang libclang-rt-14-dev redis-server"
want="$BUILD $RUNTIME $LANGUAGES"
case "${1:-}" in
  --test) want="$want $TEST" ;;
esac

missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node may come from outside Debian (a preinstalled toolchain); accept any node >= 18 with npm.
# (The server runs JavaScript with /usr/bin/node when it exists, else the first
# node on its PATH: src/sandbox/language.c.)
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  missing=$(echo "$missing" | tr ' ' '\n' | grep -vx -e nodejs -e npm | tr '\n' ' ')
fi
missing=$(echo $missing)
if [ -n "$missing" ]; then
  echo "deps: installing $missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

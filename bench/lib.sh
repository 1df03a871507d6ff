# Sourced by the bench scripts.

# server_port LOG NAME: waits (up to 30 s) for a server started with
# MCP_EXEC_ADDR=127.0.0.1:0 to log the port it listens on, and prints it;
# fails with the log on stderr when it does not (call it as
# port=$(server_port ...) || exit 1).
server_port() {
  local log=$1 name=$2 port=""
  for _ in $(seq 1 300); do
    port=$(grep -o 'listening on http://[0-9.]*:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.1
  done
  echo "$name: server did not start" >&2
  cat "$log" >&2
  return 1
}

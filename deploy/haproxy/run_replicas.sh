#!/usr/bin/env bash
# Starts K `lumen serve` replicas on loopback and HAProxy in front of them (haproxy.cfg beside
# this script), then waits. SIGTERM or SIGINT stops it all gracefully: HAProxy stops listening
# and the replicas finish their in-flight requests. To take one replica out (an upgrade), send
# its pid (in RUN_DIR/replica-N.pid) SIGTERM: it drains and HAProxy sends its conversations to
# the others. See docs/deployment.md.
#
# Usage: run_replicas.sh [-n K] [--host ADDR] [--port PORT] [--replica-ports P1,P2,...]
#                        [--run-dir DIR] [-- LUMEN_SERVE_ARGS...]
#   -n K              replicas (default 2)
#   --host, --port    where HAProxy listens (default 127.0.0.1:8080)
#   --replica-ports   the replicas' ports (default PORT+1 ... PORT+K)
#   --run-dir         where the generated haproxy.cfg, the logs and the pid files go (default: a
#                     new directory under /tmp)
#   after --          passed to every `lumen serve` (the model, --threads, --kv-cache-memory...)
# Environment: LUMEN_BIN (default: `lumen` on PATH), HAPROXY_BIN (default: `haproxy`).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lumen=${LUMEN_BIN:-lumen}
haproxy=${HAPROXY_BIN:-haproxy}
replicas=2
host=127.0.0.1
port=8080
replica_ports=""
run_dir=""
serve_args=()

die() { echo "run_replicas: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -n) replicas=${2:?-n needs a count}; shift 2 ;;
    --host) host=${2:?--host needs an address}; shift 2 ;;
    --port) port=${2:?--port needs a port}; shift 2 ;;
    --replica-ports) replica_ports=${2:?--replica-ports needs a list}; shift 2 ;;
    --run-dir) run_dir=${2:?--run-dir needs a directory}; shift 2 ;;
    --) shift; serve_args=("$@"); break ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$replicas" =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive count, not '$replicas'"
[[ "$port" =~ ^[0-9]+$ ]] || die "--port must be a number, not '$port'"
command -v "$lumen" >/dev/null || die "cannot find lumen ('$lumen'): set LUMEN_BIN"
command -v "$haproxy" >/dev/null || die "cannot find haproxy ('$haproxy'): apt-get install haproxy"

if [ -n "$replica_ports" ]; then
  IFS=, read -r -a ports <<<"$replica_ports"
  [ "${#ports[@]}" -eq "$replicas" ] || die "--replica-ports lists ${#ports[@]} ports for $replicas replicas"
else
  ports=()
  for ((i = 1; i <= replicas; i++)); do ports+=($((port + i))); done
fi
run_dir=${run_dir:-$(mktemp -d /tmp/lumen-replicas.XXXXXX)}
mkdir -p "$run_dir"

# The replicas listen on loopback only, where lumen answers loopback Host names only (its guard
# against DNS rebinding). Behind a balancer on a public address, clients send its name instead.
extra_args=()
case "$host" in
  127.* | localhost | ::1) ;;
  *) [[ " ${serve_args[*]} " =~ \ --allowed-hosts[=\ ] ]] || extra_args=(--allowed-hosts '*') ;;
esac

pids=()
stop_all() {
  trap - TERM INT
  echo "run_replicas: stopping (in-flight requests finish first)" >&2
  # HAProxy's soft stop (SIGUSR1) closes its listener and lets open connections finish.
  [ -f "$run_dir/haproxy.pid" ] && kill -USR1 "$(cat "$run_dir/haproxy.pid")" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
  exit 0
}
trap stop_all TERM INT
# A failed start: show the log that says why, stop what was started, exit 1.
abort() {
  [ -n "${2:-}" ] && cat "$2" >&2
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  echo "run_replicas: $1" >&2
  exit 1
}

for ((i = 1; i <= replicas; i++)); do
  "$lumen" serve --host 127.0.0.1 --port "${ports[i - 1]}" "${extra_args[@]}" "${serve_args[@]}" \
    2>"$run_dir/replica-$i.log" &
  pids+=($!)
  echo $! >"$run_dir/replica-$i.pid"
done

# Wait for every replica to load its model and answer /health.
for ((i = 1; i <= replicas; i++)); do
  until curl -sf -o /dev/null "http://127.0.0.1:${ports[i - 1]}/health"; do
    kill -0 "${pids[i - 1]}" 2>/dev/null || abort "replica $i did not start" "$run_dir/replica-$i.log"
    sleep 0.2
  done
done

cfg="$run_dir/haproxy.cfg"
cp "$here/haproxy.cfg" "$cfg"
for ((i = 1; i <= replicas; i++)); do
  echo "    server replica$i 127.0.0.1:${ports[i - 1]}" >>"$cfg"
done
case "$host" in *:*) lb_addr="[$host]:$port" ;; *) lb_addr="$host:$port" ;; esac
export LUMEN_LB_ADDR=$lb_addr
"$haproxy" -q -c -f "$cfg" || abort "haproxy rejected $cfg"
# -db: stay in the foreground (this script is the supervisor); its log goes to haproxy.log.
"$haproxy" -db -f "$cfg" 2>"$run_dir/haproxy.log" &
haproxy_pid=$!
echo "$haproxy_pid" >"$run_dir/haproxy.pid"
until curl -s -o /dev/null "http://$lb_addr/health"; do
  kill -0 "$haproxy_pid" 2>/dev/null || abort "haproxy did not start" "$run_dir/haproxy.log"
  sleep 0.1
done

for ((i = 1; i <= replicas; i++)); do
  echo "run_replicas: replica $i: pid ${pids[i - 1]}, http://127.0.0.1:${ports[i - 1]}" >&2
done
echo "run_replicas: serving on http://$lb_addr (run directory $run_dir)" >&2

# A replica that exits (a crash, or a SIGTERM to take it out) leaves the others serving; only
# HAProxy's exit ends the deployment.
while kill -0 "$haproxy_pid" 2>/dev/null; do
  wait -n || true
done
echo "run_replicas: haproxy exited; stopping the replicas" >&2
stop_all

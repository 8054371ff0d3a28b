#!/usr/bin/env bash
# Many idle spliced WebSocket connections at once: what each costs the proxy.
#
# An echo backend answers WebSocket upgrades; `leafgate-bench conns` opens N upgrades
# through the proxy (256 handshakes in flight at most), sends a frame on each and reads it
# back twice (the second time with all N open), then reads the proxy's resident memory
# (VmRSS) and its open descriptors (/proc/PID/fd). Peer: nginx (one worker) proxying the
# same upgrades to the same backend, measured the same way, in the same run.
# Goal (issue 15, P7): 10,000 connections in <= 512 MiB RSS and <= 2.5 descriptors each.
#
# The proxy under test runs on CPU 1, the backend and the client on CPU 0. CONNS sets N
# (default 10000, at most 30000: the descriptor limit below is sized for that).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
need nginx nginx-light
need python3 python3
CONNS=${CONNS:-10000}
if [ "$CONNS" -gt 30000 ]; then
  echo "CONNS=$CONNS: at most 30000" >&2
  exit 2
fi
# Every process here holds up to N sockets (the proxy 2N): raise the descriptor limit for
# this script only, as far as the hard limit allows, and fit N under it (the proxy needs 2N
# plus a few hundred for its own files and its pipe pool).
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=65536
limit=$(( hard < 65536 ? hard : 65536 ))
ulimit -n "$limit"
fit=$(( (limit - 300) / 2 ))
if [ "$CONNS" -gt "$fit" ]; then
  echo "note: the descriptor hard limit is $hard here (raising it needs CAP_SYS_RESOURCE), so $CONNS connections (2 sockets each in the proxy) cannot fit: running $fit"
  CONNS=$fit
fi

# SKIP_BUILD=1 runs the binaries already built (in $CARGO_TARGET_DIR or target/).
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -q -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
coproc BACKEND { exec taskset -c 0 "$bin/leafgate-bench" echo; }
trap 'kill $(jobs -p) $BACKEND_PID 2>/dev/null; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
read -r backend <&"${BACKEND[0]}"
lg=$(free_port); admin=$(free_port); nx=$(free_port)

cat >"$work/leafgate.toml" <<CONF
[admin]
bind = "127.0.0.1:$admin"
[timeouts]
upgraded_idle = "600s"
[[listener]]
name = "bench"
bind = "127.0.0.1:$lg"
max_connections = 30000
[[route]]
host = "ws.bench"
backends = ["$backend"]
CONF
mkdir -p "$work/logs"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 65536;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 65000; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$nx backlog=4096;
    location / {
      proxy_pass http://$backend;
      proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_read_timeout 600s;
    }
  }
}
CONF

load=$(cut -d' ' -f1-3 /proc/loadavg)
RUST_LOG=warn taskset -c 1 "$bin/leafgate" run --config "$work/leafgate.toml" 2>"$work/leafgate.log" &
lg_pid=$!
wait_port "$lg"
taskset -c 0 "$bin/leafgate-bench" conns "127.0.0.1:$lg" ws.bench "$CONNS" "$lg_pid" >"$work/leafgate.json"
kill "$lg_pid"; wait "$lg_pid" 2>/dev/null || true

taskset -c 1 nginx -p "$work" -c "$work/nginx.conf" -e "$work/logs/error.log"
wait_port "$nx"
nginx_pids="$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr '\n' ' ')"
taskset -c 0 "$bin/leafgate-bench" conns "127.0.0.1:$nx" ws.bench "$CONNS" $nginx_pids >"$work/nginx.json"

python3 - "$work/leafgate.json" "$work/nginx.json" "$load" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, sys
lg, nx = (json.load(open(p)) for p in sys.argv[1:3])
n = lg["conns"]
print(f"{n} upgraded WebSocket connections held open at once (load before {sys.argv[3]}, after {sys.argv[4]})")
for name, r in (("leafgate", lg), ("nginx", nx)):
    print(f"{name:<9} RSS {r['rss_kib'] / 1024:7.1f} MiB ({r['rss_per_conn_kib']:5.2f} KiB/conn added)"
          f"   fds {r['fds']:6d} ({r['fds_per_conn']:.3f}/conn)   opened in {r['open_secs']:.1f} s")
rss_ok = lg["rss_kib"] <= 512 * 1024
fds_ok = lg["fds_per_conn"] <= 2.5
print(f"goal: <= 512 MiB RSS: {'met' if rss_ok else 'not met'}; <= 2.5 fds/conn: {'met' if fds_ok else 'not met'}")
PY

#!/usr/bin/env bash
# leafgate vs nginx as the same reverse proxy to the same upstream, in one run.
#
# The upstream is nginx answering a small fixed body (so the upstream is never the
# bottleneck's odd one out). Both proxies forward to it over pooled keep-alive HTTP/1.1.
# Each proxy is pinned to its own core (PROXY_CPU, default 1: one nginx worker, one leafgate
# serving thread); wrk and the upstream share another (LOAD_CPU, default 0), so neither
# steals the proxy's CPU. wrk loads nginx, then leafgate, with the same settings, RUNS times
# (default 3). For each run it prints req/s, p50, p99 and the CPU the proxy used (utime +
# stime from /proc/PID/stat over the run), then req/s per proxy core and the ratios.
# Set WRK_DURATION / WRK_CONNECTIONS / WRK_THREADS / RUNS to change the load; LEAFGATE_BIN
# to measure a binary already built.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
need wrk wrk
need nginx nginx-light
need python3 python3
need taskset util-linux

PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
RUNS=${RUNS:-3}
export WRK_CPU=$LOAD_CPU WRK_THREADS=${WRK_THREADS:-1} WRK_CONNECTIONS=${WRK_CONNECTIONS:-32}
export WRK_DURATION=${WRK_DURATION:-10s}
if [ -z "${LEAFGATE_BIN:-}" ]; then
  cargo build --release -q -p leafgate
  LEAFGATE_BIN=${CARGO_TARGET_DIR:-target}/release/leafgate
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

up=$(free_port); nx=$(free_port); lg=$(free_port); admin=$(free_port)

mkdir -p "$work/logs"
cat >"$work/upstream.conf" <<CONF
worker_processes 1;
pid $work/upstream.pid;
error_log $work/logs/upstream-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$up;
    keepalive_requests 1000000;
    location / { return 200 "hello from the upstream\n"; }
  }
}
CONF
cat >"$work/proxy.conf" <<CONF
worker_processes 1;
pid $work/proxy.pid;
error_log $work/logs/proxy-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  upstream backend { server 127.0.0.1:$up; keepalive 128; }
  server {
    listen 127.0.0.1:$nx;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$host;
    }
  }
}
CONF
cat >"$work/leafgate.toml" <<CONF
[admin]
bind = "127.0.0.1:$admin"
[[listener]]
name = "bench"
bind = "127.0.0.1:$lg"
[[route]]
host = "*"
backends = ["127.0.0.1:$up"]
CONF

echo "load before: $(uptime)"
taskset -c "$LOAD_CPU" nginx -p "$work" -c "$work/upstream.conf" -g 'daemon off;' 2>>"$work/logs/upstream-stderr" &
taskset -c "$PROXY_CPU" nginx -p "$work" -c "$work/proxy.conf" -g 'daemon off;' 2>>"$work/logs/proxy-stderr" &
nginx_pid=$!
RUST_LOG=warn taskset -c "$PROXY_CPU" "$LEAFGATE_BIN" run --config "$work/leafgate.toml" 2>"$work/logs/leafgate.log" &
lg_pid=$!
wait_port "$up"; wait_port "$nx"; wait_port "$lg"
# The nginx proxy's CPU is its master's and its worker's.
nginx_pids=("$nginx_pid" $(pgrep -P "$nginx_pid"))

# measure NAME URL PID...: one wrk run; stores CPU_S (seconds of CPU the PIDs used) and
# ELAPSED_S besides wrk_run's REQS, P50_MS and P99_MS.
measure() {
  local name=$1 url=$2; shift 2
  local t0 t1 c0 c1
  c0=$(cpu_ticks "$@"); t0=$(date +%s.%N)
  wrk_run "$name" "$url"
  c1=$(cpu_ticks "$@"); t1=$(date +%s.%N)
  CPU_S=$(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" 'BEGIN {print (b - a) / hz}')
  ELAPSED_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  echo "           proxy CPU ${CPU_S}s over ${ELAPSED_S}s"
}

echo "wrk -t$WRK_THREADS -c$WRK_CONNECTIONS -d$WRK_DURATION on CPU $LOAD_CPU with the upstream; each proxy on CPU $PROXY_CPU; $(nproc) cores"
# Warm both pools, then measure.
WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$nx/" >/dev/null
WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$lg/" >/dev/null
results=()
for run in $(seq 1 "$RUNS"); do
  echo "run $run"
  measure nginx "http://127.0.0.1:$nx/" "${nginx_pids[@]}"
  results+=("$REQS $P50_MS $P99_MS $CPU_S $ELAPSED_S")
  measure leafgate "http://127.0.0.1:$lg/" "$lg_pid"
  results+=("$REQS $P50_MS $P99_MS $CPU_S $ELAPSED_S")
done
echo "load after: $(uptime)"

python3 - "${results[@]}" <<'PY'
import sys
rows = [list(map(float, r.split())) for r in sys.argv[1:]]
print("run  nginx req/s  leafgate req/s  ratio  nginx/core  leafgate/core  ratio/core  p99 nginx/leafgate ms")
per_core = []
for i in range(0, len(rows), 2):
    (nr, n50, n99, ncpu, nel), (lr, l50, l99, lcpu, lel) = rows[i], rows[i + 1]
    # req/s for one fully used core: requests served per CPU-second the proxy used.
    nc, lc = nr * nel / ncpu, lr * lel / lcpu
    per_core.append(lc / nc)
    print(f"{i // 2 + 1:>3}  {nr:11.0f}  {lr:14.0f}  {lr / nr:5.2f}x  {nc:10.0f}  {lc:13.0f}  {lc / nc:9.2f}x"
          f"  {n99:.2f} / {l99:.2f} ({'no worse' if l99 <= n99 else 'worse'})")
print(f"ratio per core: {min(per_core):.2f}x .. {max(per_core):.2f}x (goal >= 1.2x, p99 no worse)")
PY

#!/usr/bin/env bash
# leafgate vs nginx as the same reverse proxy to the same upstream, in one run.
#
# The upstream is nginx answering a small fixed body (so the upstream is never the
# bottleneck's odd one out). Both proxies forward to it over pooled keep-alive HTTP/1.1;
# wrk loads each in turn with the same settings. Prints req/s and p99 for both and the
# ratio. Set WRK_DURATION / WRK_CONNECTIONS / WRK_THREADS to change the load.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
need wrk wrk
need nginx nginx-light
need python3 python3

cargo build --release -q -p leafgate
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

up=$(free_port); nx=$(free_port); lg=$(free_port); admin=$(free_port)
workers=${NGINX_WORKERS:-auto}

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
worker_processes $workers;
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

nginx -p "$work" -c "$work/upstream.conf" -g 'daemon off;' 2>>"$work/logs/upstream-stderr" &
nginx -p "$work" -c "$work/proxy.conf" -g 'daemon off;' 2>>"$work/logs/proxy-stderr" &
RUST_LOG=warn target/release/leafgate run --config "$work/leafgate.toml" 2>"$work/logs/leafgate.log" &
wait_port "$up"; wait_port "$nx"; wait_port "$lg"

echo "wrk -t${WRK_THREADS:-2} -c${WRK_CONNECTIONS:-64} -d${WRK_DURATION:-10s}, $(nproc) cores, nginx workers=$workers"
# Warm both pools, then measure.
WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$nx/" >/dev/null
WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$lg/" >/dev/null
wrk_run nginx "http://127.0.0.1:$nx/"; nginx_reqs=$REQS; nginx_p99=$P99_MS
wrk_run leafgate "http://127.0.0.1:$lg/"; lg_reqs=$REQS; lg_p99=$P99_MS

python3 - "$lg_reqs" "$nginx_reqs" "$lg_p99" "$nginx_p99" <<'PY'
import sys
lg, nx, lp, np_ = map(float, sys.argv[1:])
print(f"ratio     leafgate/nginx req/s = {lg / nx:.2f}x (goal >= 1.2x)   p99 {lp:.2f} ms vs {np_:.2f} ms ({'no worse' if lp <= np_ else 'worse'})")
PY

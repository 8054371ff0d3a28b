#!/usr/bin/env bash
# leafgate vs nginx as the same reverse proxy to the same upstream, in one run.
#
# The upstream is nginx answering a small fixed body (so the upstream is never the
# bottleneck's odd one out). Both proxies forward to it over pooled keep-alive HTTP/1.1.
# Each proxy is pinned to its own core (PROXY_CPU, default 1: one nginx worker, one leafgate
# serving thread); wrk and the upstream share another (LOAD_CPU, default 0), so neither
# steals the proxy's CPU. wrk loads nginx and leafgate with the same settings, RUNS times
# (default 3), each run in SLICES turns (default 5) of WRK_DURATION / SLICES in which the
# proxies take turns (see the loop below). For each run it prints req/s, p50, p99 and the
# CPU the proxy used (utime + stime from /proc/PID/stat over its turns), then req/s per
# proxy core and the ratios.
# Set WRK_DURATION / WRK_CONNECTIONS / WRK_THREADS / RUNS to change the load; LEAFGATE_BIN
# to measure a binary already built; BODY_BYTES to have the upstream answer a body of that
# many bytes (a static file) instead of its 24-byte text.
#
# SYSCALLS=1 then loads each proxy once more for 5 s and counts, with `perf stat` on the
# kernel's syscall tracepoints, the socket and epoll calls it makes per request: where the
# kernel time per request goes, the same way for every proxy (skipped, with a note, where
# `perf` or its tracepoints are not available).
#
# FLOOR=1 adds a third proxy on the same core: nginx's stream module relaying each client
# connection to its own upstream connection, bytes only, no HTTP. Every HTTP proxy does at
# least that socket work per request, so its req/s per core is the ceiling any of them could
# reach on this benchmark, and the script prints it against nginx's HTTP proxy.
#
# URING=1 adds two more on the same core (issue 45, `bench/uring/`): `uring-relay`, the
# same bytes-only relay on io_uring (one thread, multishot recv into a provided buffer
# ring), and `uring-proxy`, an HTTP/1.1 proxy prototype on io_uring with the fast path's
# rewrite and pooled upstream connections. Both are measured in every run like the others,
# printed against nginx, leafgate and the epoll relay, and, with SYSCALLS=1, counted with
# `io_uring_enter` besides the socket calls. They stop when the script's end closes their
# standard input.
#
# HAPROXY=1 adds HAProxy (Debian's `haproxy`, installed when missing) on the same core as
# the same HTTP/1.1 reverse proxy to the same upstream, set up as close to the nginx proxy
# as HAProxy allows: one thread, `mode http`, keep-alive to the client, pooled keep-alive
# upstream connections (`http-reuse always`), X-Forwarded-For (`option forwardfor`) and the
# same X-Forwarded-Proto and X-Forwarded-Host, no logging, generous timeouts. A curl through
# it must answer the upstream's body before anything is measured; then it is measured in
# every run like the others, printed against nginx and leafgate per core, in the CPU per
# request lines and, with SYSCALLS=1, counted like the others.
#
# ACCESS_LOG=1 adds a second leafgate on the same core, the same config plus
# `[access_log] format = "json"` to a file, measured in every run right after the first:
# what the access log costs per core (issue 44's goal: at most 10%, so >= 0.90x), with the
# lines it wrote counted so a run that logged nothing cannot pass for a cheap one.
#
# GATEWAY=1 adds a leafgate serving a Gateway API route (issue 46's goal: a request through
# an HTTPRoute with a header modifier at >= 0.95x a TOML route's requests per core): a third
# leafgate on the same core, the same TOML config plus a kubesim root (on LOAD_CPU) holding
# a GatewayClass, a Gateway on 127.0.211.1 and one HTTPRoute for bench.example whose rule
# sets, adds and removes a request header and forwards to a Service whose EndpointSlice is
# the same upstream nginx (listening on 127.0.211.2 too: the gateway's own 127.0.0.1 is no
# backend). A curl through it must answer the upstream's body before anything is measured;
# then it is measured in every run right after leafgate's TOML route, against it per core.
#
# H2=1 adds the HTTP/2 rows (issue 47) after them: h2load (Debian's `nghttp2-client`,
# installed when missing) on LOAD_CPU against nginx and leafgate on PROXY_CPU, over
# prior-knowledge h2c and over TLS with ALPN `h2` (the same self-signed P-256 certificate
# for both, TLS 1.3 with TLS_AES_128_GCM_SHA256 asked of both), each proxy forwarding to
# the same upstream over pooled keep-alive HTTP/1.1, at H2_LOADS connections x streams
# (default "16x16 64x1"), H2_REQUESTS requests a run (default 200000), RUNS runs. For each
# row: requests per CPU-second of the proxy, p50/p99 from h2load's per-request log, user
# and kernel µs per request, and leafgate's ratio to nginx in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
need wrk wrk
need nginx nginx-light
need python3 python3
need taskset util-linux
FLOOR=${FLOOR:-0}
URING=${URING:-0}
HAPROXY=${HAPROXY:-0}
stream_module=/usr/lib/nginx/modules/ngx_stream_module.so
if [ "$FLOOR" = 1 ] && ! [ -f "$stream_module" ]; then
  install_pkg libnginx-mod-stream
fi
[ "$HAPROXY" = 1 ] && need haproxy haproxy
H2=${H2:-0}
ACCESS_LOG=${ACCESS_LOG:-0}
GATEWAY=${GATEWAY:-0}
[ "$H2" = 1 ] && need h2load nghttp2-client

PROXY_CPU=${PROXY_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
RUNS=${RUNS:-3}
export WRK_CPU=$LOAD_CPU WRK_THREADS=${WRK_THREADS:-1} WRK_CONNECTIONS=${WRK_CONNECTIONS:-32}
export WRK_DURATION=${WRK_DURATION:-10s}
if [ -z "${LEAFGATE_BIN:-}" ]; then
  cargo build --release -q -p leafgate
  LEAFGATE_BIN=${CARGO_TARGET_DIR:-target}/release/leafgate
fi
if [ "$GATEWAY" = 1 ]; then
  cargo build --release -q -p kubesim --bin kubesim
  kubesim_bin=${CARGO_TARGET_DIR:-target}/release/kubesim
fi
if [ "$URING" = 1 ]; then
  cargo build --release -q -p leafgate-uring
  uring_bin=${CARGO_TARGET_DIR:-target}/release
fi
work=$(mktemp -d)
# URING=1's two run as process substitutions, not jobs: killed by pid (`wait` waits for
# the last of them).
uring_pids=()
trap 'kill $(jobs -p) "${uring_pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

up=$(free_port); nx=$(free_port); lg=$(free_port); admin=$(free_port); l4=$(free_port)
BODY_BYTES=${BODY_BYTES:-0}
mkdir -p "$work/www"
# nginx's workers run as an unprivileged user: the body must be readable by them (mktemp's
# folder is not), or every request is a 404 and the run measures error pages.
chmod 755 "$work" "$work/www"
if [ "$BODY_BYTES" -gt 0 ]; then
  head -c "$BODY_BYTES" /dev/zero | tr '\0' 'x' >"$work/www/body"
  chmod 644 "$work/www/body"
  answer="root $work/www; try_files /body =404;"
else
  answer='return 200 "hello from the upstream\n";'
fi

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
    $( [ "$GATEWAY" = 1 ] && echo "listen 127.0.211.2:$up;" )
    keepalive_requests 1000000;
    location / { $answer }
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
cat >"$work/relay.conf" <<CONF
load_module $stream_module;
worker_processes 1;
pid $work/relay.pid;
error_log $work/logs/relay-error.log warn;
events { worker_connections 4096; }
stream {
  server { listen 127.0.0.1:$l4; proxy_pass 127.0.0.1:$up; }
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
hx=$(free_port)
# HAProxy's counterpart of proxy.conf: one thread, no logs (no `log` line), keep-alive both
# ways, idle upstream connections shared by every client (`http-reuse always`, as nginx's
# `keepalive` pool is), the forwarding headers nginx sets.
cat >"$work/haproxy.cfg" <<CONF
global
  nbthread 1
  maxconn 4096
defaults
  mode http
  option http-keep-alive
  option forwardfor
  http-reuse always
  timeout connect 10s
  timeout client 300s
  timeout server 300s
  timeout http-keep-alive 300s
frontend bench
  bind 127.0.0.1:$hx
  http-request set-header X-Forwarded-Proto http
  http-request set-header X-Forwarded-Host %[req.hdr(host)]
  default_backend upstream
backend upstream
  server upstream 127.0.0.1:$up
CONF

if [ "$ACCESS_LOG" = 1 ]; then
  lgl=$(free_port); admin_l=$(free_port)
  sed -e "s/127.0.0.1:$admin\"/127.0.0.1:$admin_l\"/" -e "s/127.0.0.1:$lg\"/127.0.0.1:$lgl\"/" \
    "$work/leafgate.toml" >"$work/leafgate-logged.toml"
  printf '[access_log]\nformat = "json"\npath = "%s"\n' "$work/access.log" >>"$work/leafgate-logged.toml"
fi
if [ "$GATEWAY" = 1 ]; then
  lgw=$(free_port); admin_g=$(free_port); gwp=$(free_port)
  sed -e "s/127.0.0.1:$admin\"/127.0.0.1:$admin_g\"/" -e "s/127.0.0.1:$lg\"/127.0.0.1:$lgw\"/" \
    "$work/leafgate.toml" >"$work/leafgate-gateway.toml"
  cat >>"$work/leafgate-gateway.toml" <<CONF
[kubernetes]
kubeconfig = "$work/root.kubeconfig"
identity = "bench"
election = { lease_duration = "2s", renew_deadline = "1s", retry_period = "200ms" }
[kubernetes.gateway]
addresses = ["127.0.211.1"]
allow_backends = ["127.0.211.2/32"]
CONF
  cat >"$work/gateway.json" <<JSON
[
  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leafgate"}},
  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
  {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "leafgate"},
   "spec": {"controllerName": "leafgate.io/gateway-controller"}},
  {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw", "namespace": "bench"},
   "spec": {"gatewayClassName": "leafgate", "addresses": [{"type": "IPAddress", "value": "127.0.211.1"}],
            "listeners": [{"name": "http", "protocol": "HTTP", "port": $gwp}]}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "up", "namespace": "bench"},
   "spec": {"type": "ClusterIP", "selector": {"app": "up"}, "ports": [{"name": "http", "port": 80, "targetPort": $up}]}},
  {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
   "metadata": {"name": "up-abcde", "namespace": "bench",
                "labels": {"kubernetes.io/service-name": "up",
                           "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
   "addressType": "IPv4", "ports": [{"name": "http", "port": $up, "protocol": "TCP"}],
   "endpoints": [{"addresses": ["127.0.211.2"], "conditions": {"ready": true, "serving": true, "terminating": false}}]},
  {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "modified", "namespace": "bench"},
   "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["bench.example"],
            "rules": [{"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
                         "set": [{"name": "X-Bench", "value": "set"}],
                         "add": [{"name": "X-Bench-Added", "value": "added"}],
                         "remove": ["X-Bench-Removed"]}}],
                       "backendRefs": [{"name": "up", "port": 80}]}]}}
]
JSON
fi
if [ "$H2" = 1 ]; then
  # The h2 listeners: nginx's h2c and TLS servers beside its HTTP/1.1 one, leafgate's TLS
  # listener beside its plain one (which takes prior-knowledge h2c as it is).
  nx2=$(free_port); nxs=$(free_port); lgs=$(free_port)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=bench.example -addext subjectAltName=DNS:bench.example \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
  chmod 644 "$work/key.pem" "$work/cert.pem"
  h2_location="location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$host;
    }"
  # Into proxy.conf's http block, before its closing brace.
  sed -i '$d' "$work/proxy.conf"
  cat >>"$work/proxy.conf" <<CONF
  server {
    listen 127.0.0.1:$nx2 http2;
    keepalive_requests 1000000;
    http2_max_requests 1000000;
    $h2_location
  }
  server {
    listen 127.0.0.1:$nxs ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    keepalive_requests 1000000;
    http2_max_requests 1000000;
    $h2_location
  }
}
CONF
  cat >>"$work/leafgate.toml" <<CONF
[[listener]]
name = "bench-tls"
bind = "127.0.0.1:$lgs"
tls = { cert = "$work/cert.pem", key = "$work/key.pem" }
CONF
fi

echo "load before: $(uptime)"
taskset -c "$LOAD_CPU" nginx -p "$work" -c "$work/upstream.conf" -g 'daemon off;' 2>>"$work/logs/upstream-stderr" &
taskset -c "$PROXY_CPU" nginx -p "$work" -c "$work/proxy.conf" -g 'daemon off;' 2>>"$work/logs/proxy-stderr" &
nginx_pid=$!
RUST_LOG=warn taskset -c "$PROXY_CPU" "$LEAFGATE_BIN" run --config "$work/leafgate.toml" 2>"$work/logs/leafgate.log" &
lg_pid=$!
wait_port "$up"; wait_port "$nx"; wait_port "$lg"
if [ "$ACCESS_LOG" = 1 ]; then
  RUST_LOG=warn taskset -c "$PROXY_CPU" "$LEAFGATE_BIN" run --config "$work/leafgate-logged.toml" 2>"$work/logs/leafgate-logged.log" &
  lgl_pid=$!
  wait_port "$lgl"
fi
if [ "$GATEWAY" = 1 ]; then
  taskset -c "$LOAD_CPU" "$kubesim_bin" --kubeconfig "$work/root.kubeconfig" --objects "$work/gateway.json" \
    >"$work/logs/kubesim.log" 2>&1 &
  for _ in $(seq 1 100); do [ -s "$work/root.kubeconfig" ] && break; sleep 0.1; done
  RUST_LOG=warn taskset -c "$PROXY_CPU" "$LEAFGATE_BIN" run --config "$work/leafgate-gateway.toml" 2>"$work/logs/leafgate-gateway.log" &
  lgw_pid=$!
  wait_port "$lgw"
  # Served once the Gateway is programmed and the route attached: the upstream's body.
  expected=$(curl -sf -H 'Host: bench.example' "http://127.0.0.1:$up/")
  got=""
  for _ in $(seq 1 300); do
    got=$(curl -sf -H 'Host: bench.example' "http://127.0.211.1:$gwp/") && [ "$got" = "$expected" ] && break
    sleep 0.1
  done
  if [ "$got" != "$expected" ]; then
    echo "the Gateway route does not answer the upstream's body within 30 s (got ${#got} bytes); leafgate's log:" >&2
    cat "$work/logs/leafgate-gateway.log" >&2
    exit 1
  fi
fi
# The nginx proxy's CPU is its master's and its worker's.
nginx_pids=("$nginx_pid" $(pgrep -P "$nginx_pid"))
if [ "$FLOOR" = 1 ]; then
  taskset -c "$PROXY_CPU" nginx -p "$work" -c "$work/relay.conf" -g 'daemon off;' 2>>"$work/logs/relay-stderr" &
  relay_pid=$!
  wait_port "$l4"
  relay_pids=("$relay_pid" $(pgrep -P "$relay_pid"))
fi
if [ "$URING" = 1 ]; then
  ur=$(free_port); uh=$(free_port)
  # Each reads its standard input from a pipe the script holds open: it ends with the script.
  exec {ur_stdin}> >(exec taskset -c "$PROXY_CPU" "$uring_bin/uring-relay" "127.0.0.1:$ur" "127.0.0.1:$up" >"$work/logs/uring-relay.log" 2>&1)
  ur_pid=$!
  exec {uh_stdin}> >(exec taskset -c "$PROXY_CPU" "$uring_bin/uring-proxy" "127.0.0.1:$uh" "127.0.0.1:$up" >"$work/logs/uring-proxy.log" 2>&1)
  uh_pid=$!
  uring_pids=("$ur_pid" "$uh_pid")
  wait_port "$ur"; wait_port "$uh"
fi
if [ "$HAPROXY" = 1 ]; then
  # -db: in the foreground, one process (no master): its pid is the one to measure.
  taskset -c "$PROXY_CPU" haproxy -db -f "$work/haproxy.cfg" >"$work/logs/haproxy.log" 2>&1 &
  hx_pid=$!
  wait_port "$hx"
  # Each answer must be the upstream's, not an error page of HAProxy's.
  expected=$(curl -sf -H 'Host: bench.example' "http://127.0.0.1:$up/")
  got=$(curl -sf -H 'Host: bench.example' "http://127.0.0.1:$hx/") || got="(curl failed: $?)"
  if [ "$got" != "$expected" ]; then
    echo "HAProxy does not answer the upstream's body (got ${#got} bytes: ${got:0:80}); its log:" >&2
    cat "$work/logs/haproxy.log" >&2
    exit 1
  fi
fi

# measure NAME URL PID...: one wrk run; stores CPU_S, USER_S and SYSTEM_S (seconds of CPU
# the PIDs used, in all, in user space and in the kernel) and ELAPSED_S besides wrk_run's
# REQS, P50_MS and P99_MS.
measure() {
  local name=$1 url=$2; shift 2
  local t0 t1 c0 c1 hz
  hz=$(getconf CLK_TCK)
  c0=$(cpu_ticks_split "$@"); t0=$(date +%s.%N)
  wrk_run "$name" "$url"
  c1=$(cpu_ticks_split "$@"); t1=$(date +%s.%N)
  USER_S=$(awk -v a="${c0% *}" -v b="${c1% *}" -v hz="$hz" 'BEGIN {print (b - a) / hz}')
  SYSTEM_S=$(awk -v a="${c0#* }" -v b="${c1#* }" -v hz="$hz" 'BEGIN {print (b - a) / hz}')
  CPU_S=$(awk -v u="$USER_S" -v s="$SYSTEM_S" 'BEGIN {print u + s}')
  ELAPSED_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  echo "           proxy CPU ${CPU_S}s (user ${USER_S}s, kernel ${SYSTEM_S}s) over ${ELAPSED_S}s"
}

echo "wrk -t$WRK_THREADS -c$WRK_CONNECTIONS -d$WRK_DURATION on CPU $LOAD_CPU with the upstream (body: ${BODY_BYTES} bytes, 0 = 24-byte text); each proxy on CPU $PROXY_CPU; $(nproc) cores"
# Warm both pools, then measure.
WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$nx/" >/dev/null
WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$lg/" >/dev/null
[ "$FLOOR" = 1 ] && WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$l4/" >/dev/null
if [ "$URING" = 1 ]; then
  WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$ur/" >/dev/null
  WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$uh/" >/dev/null
fi
[ "$HAPROXY" = 1 ] && WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$hx/" >/dev/null
[ "$ACCESS_LOG" = 1 ] && WRK_DURATION=2s wrk_run warmup "http://127.0.0.1:$lgl/" >/dev/null
[ "$GATEWAY" = 1 ] && WRK_DURATION=2s wrk_run warmup "http://127.0.211.1:$gwp/" >/dev/null
# Each run measures every proxy in SLICES turns (default 5) of WRK_DURATION / SLICES each,
# all of them taking turns and the order reversed every other turn, and sums each one's
# turns: a proxy measured for the whole duration at once and the next one after it see
# different stretches of this machine (one run's spread between two identical leafgates on
# the core was about 10% when they were measured one after the other), while proxies
# taking turns every two seconds go through the same stretches. A proxy's per-core figure
# is then the requests it completed over the CPU-seconds it used, across its turns.
SLICES=${SLICES:-5}
slice_s=$(( ${WRK_DURATION%s} / SLICES ))
[ "$slice_s" -ge 1 ] || { echo "WRK_DURATION ($WRK_DURATION) is shorter than SLICES ($SLICES) seconds" >&2; exit 2; }
# Each entry: the name, the URL, then the pids whose CPU is counted.
proxies=("nginx http://127.0.0.1:$nx/ ${nginx_pids[*]}" "leafgate http://127.0.0.1:$lg/ $lg_pid")
[ "$ACCESS_LOG" = 1 ] && proxies+=("leafgate+log http://127.0.0.1:$lgl/ $lgl_pid")
[ "$GATEWAY" = 1 ] && proxies+=("leafgate-httproute http://127.0.211.1:$gwp/ $lgw_pid")
[ "$FLOOR" = 1 ] && proxies+=("L4-relay http://127.0.0.1:$l4/ ${relay_pids[*]}")
[ "$URING" = 1 ] && proxies+=("uring-relay http://127.0.0.1:$ur/ $ur_pid" "uring-proxy http://127.0.0.1:$uh/ $uh_pid")
[ "$HAPROXY" = 1 ] && proxies+=("HAProxy http://127.0.0.1:$hx/ $hx_pid")

# turn NAME URL PID...: one turn of NAME's load, its figures added to the run's file.
turn() {
  local name=$1
  WRK_DURATION=${slice_s}s measure "$@"
  echo "$REQ_COUNT $P50_MS $P99_MS $USER_S $SYSTEM_S $ELAPSED_S" >>"$work/turns-$run-$name"
}

# summed NAME: NAME's turns in this run as one row (req/s, p50, p99, CPU s, elapsed s,
# user s, kernel s), req/s over the turns' time and p50/p99 the turns' means.
summed() {
  awk '{n += $1; p50 += $2; p99 += $3; u += $4; k += $5; e += $6; turns++}
       END {printf "%f %f %f %f %f %f %f\n", n / e, p50 / turns, p99 / turns, u + k, e, u, k}' \
    "$work/turns-$run-$1"
}

results=(); floor=(); uring=(); haproxy=(); logged=(); gateway=()
for run in $(seq 1 "$RUNS"); do
  echo "run $run ($SLICES turns of ${slice_s}s each)"
  [ "$ACCESS_LOG" = 1 ] && lines0=$(wc -l <"$work/access.log" 2>/dev/null || echo 0)
  for slice in $(seq 1 "$SLICES"); do
    order=("${proxies[@]}")
    if (( slice % 2 == 0 )); then
      order=()
      for (( i = ${#proxies[@]} - 1; i >= 0; i-- )); do order+=("${proxies[i]}"); done
    fi
    for proxy in "${order[@]}"; do
      # shellcheck disable=SC2086 # the entry is the name, the URL and the pids, as words.
      turn $proxy
    done
  done
  results+=("$(summed nginx)" "$(summed leafgate)")
  if [ "$ACCESS_LOG" = 1 ]; then
    sleep 0.2 # the writer flushes every 50 ms
    lines1=$(wc -l <"$work/access.log")
    logged+=("$(summed leafgate+log) $((lines1 - lines0))")
  fi
  [ "$GATEWAY" = 1 ] && gateway+=("$(summed leafgate-httproute)")
  [ "$FLOOR" = 1 ] && floor+=("$(summed L4-relay)")
  [ "$URING" = 1 ] && uring+=("$(summed uring-relay)" "$(summed uring-proxy)")
  [ "$HAPROXY" = 1 ] && haproxy+=("$(summed HAProxy)")
done
echo "load after: $(uptime)"

# syscalls NAME URL PID: socket and epoll calls per request of PID over a 5 s load.
syscalls() {
  local name=$1 url=$2 pid=$3 calls events
  calls=(read readv recvfrom write writev sendto epoll_wait epoll_ctl futex)
  [ "$URING" = 1 ] && calls+=(io_uring_enter)
  events=$(printf 'syscalls:sys_enter_%s,' "${calls[@]}")
  WRK_DURATION=5s wrk_run "$name" "$url" >"$work/syscalls-$name.wrk" &
  local load=$!
  sleep 0.2
  perf stat -x, -e "${events%,}" -p "$pid" -o "$work/syscalls-$name.csv" -- sleep 4.6
  wait "$load"
  local reqs
  reqs=$(awk -v s=4.6 '$1 == "'"$name"'" {print $2 * s}' "$work/syscalls-$name.wrk")
  awk -F, -v n="$reqs" -v name="$name" '
    /syscalls:sys_enter_/ { sub("syscalls:sys_enter_", "", $3); if ($1 / n >= 0.005) out = out sprintf(" %s %.2f", $3, $1 / n) }
    END { print "  " name ", per request:" out }' "$work/syscalls-$name.csv"
}
if [ "${SYSCALLS:-0}" = 1 ]; then
  if command -v perf >/dev/null && perf stat -e syscalls:sys_enter_writev -- true >/dev/null 2>&1; then
    echo "syscalls (perf stat on the syscall tracepoints, 5 s of the same load each):"
    syscalls nginx "http://127.0.0.1:$nx/" "${nginx_pids[1]}"
    syscalls leafgate "http://127.0.0.1:$lg/" "$lg_pid"
    [ "$FLOOR" = 1 ] && syscalls "L4-relay" "http://127.0.0.1:$l4/" "${relay_pids[1]}"
    if [ "$URING" = 1 ]; then
      syscalls "uring-relay" "http://127.0.0.1:$ur/" "$ur_pid"
      syscalls "uring-proxy" "http://127.0.0.1:$uh/" "$uh_pid"
    fi
    [ "$HAPROXY" = 1 ] && syscalls HAProxy "http://127.0.0.1:$hx/" "$hx_pid"
  else
    echo "syscalls: skipped (perf with the syscall tracepoints is not available here)"
  fi
fi

python3 - "${results[@]}" -- "${floor[@]}" -- "${uring[@]}" -- "${haproxy[@]}" -- "${logged[@]}" -- "${gateway[@]}" <<'PY'
import sys
args = sys.argv[1:]
# GATEWAY=1 rows, one a run: leafgate serving the HTTPRoute with a header modifier.
cut5 = len(args) - 1 - args[::-1].index("--")
gateway = [list(map(float, r.split())) for r in args[cut5 + 1:]]
args = args[:cut5]
cut = args.index("--")
cut2 = args.index("--", cut + 1)
cut3 = args.index("--", cut2 + 1)
cut4 = args.index("--", cut3 + 1)
# ACCESS_LOG=1 rows, one a run: leafgate with its JSON access log, and the lines written.
logged = [list(map(float, r.split())) for r in args[cut4 + 1:]]
args = args[:cut4]
# Each row: req/s, p50, p99, CPU s, elapsed s, user s, kernel s.
rows = [list(map(float, r.split())) for r in args[:cut]]
floor = [list(map(float, r.split())) for r in args[cut + 1:cut2]]
# io_uring rows, two a run: the relay, then the proxy prototype.
uring = [list(map(float, r.split())) for r in args[cut2 + 1:cut3]]
# HAProxy rows, one a run.
haproxy = [list(map(float, r.split())) for r in args[cut3 + 1:]]

def per_core(row):
    """req/s for one fully used core: requests served per CPU-second the proxy used."""
    reqs, _, _, cpu, elapsed, _, _ = row
    return reqs * elapsed / cpu

def split_us(row):
    """(user, kernel) microseconds of the proxy's CPU per request."""
    reqs, _, _, _, elapsed, user, system = row
    n = reqs * elapsed
    return user / n * 1e6, system / n * 1e6

print("run  nginx req/s  leafgate req/s  ratio  nginx/core  leafgate/core  ratio/core  p99 nginx/leafgate ms")
ratios = []
for i in range(0, len(rows), 2):
    ngx, lg = rows[i], rows[i + 1]
    nc, lc = per_core(ngx), per_core(lg)
    ratios.append(lc / nc)
    print(f"{i // 2 + 1:>3}  {ngx[0]:11.0f}  {lg[0]:14.0f}  {lg[0] / ngx[0]:5.2f}x  {nc:10.0f}  {lc:13.0f}  {lc / nc:9.2f}x"
          f"  {ngx[2]:.2f} / {lg[2]:.2f} ({'no worse' if lg[2] <= ngx[2] else 'worse'})")
print(f"ratio per core: {min(ratios):.2f}x .. {max(ratios):.2f}x (goal >= 1.0x, p99 no worse)")
print("CPU per request, user + kernel:")
for i in range(0, len(rows), 2):
    line = []
    for name, row in [("nginx", rows[i]), ("leafgate", rows[i + 1])] + (
            [("L4 relay", floor[i // 2])] if floor else []) + (
            [("uring relay", uring[i]), ("uring proxy", uring[i + 1])] if uring else []) + (
            [("HAProxy", haproxy[i // 2])] if haproxy else []):
        user, kernel = split_us(row)
        line.append(f"{name} {user:.1f} + {kernel:.1f} us")
    print(f"{i // 2 + 1:>3}  " + ", ".join(line))
if floor:
    # The L4 relay ran right after each run's two proxies: its ceiling against that run's nginx.
    ceilings = [per_core(relay) / per_core(rows[2 * i]) for i, relay in enumerate(floor)]
    for i, relay in enumerate(floor):
        print(f"{i + 1:>3}  L4 relay {relay[0]:.0f} req/s, {per_core(relay):.0f} per core,"
              f" p99 {relay[2]:.2f} ms: {ceilings[i]:.2f}x nginx's HTTP proxy per core")
    print(f"ceiling for any HTTP proxy here (L4 relay per core / nginx per core): {min(ceilings):.2f}x .. {max(ceilings):.2f}x")
if uring:
    # Each run's io_uring rows against the same run's nginx, leafgate and epoll relay.
    relay_x, proxy_x = [], []
    for i in range(0, len(uring), 2):
        ur, uh = uring[i], uring[i + 1]
        ngx, lg = per_core(rows[i]), per_core(rows[i + 1])
        past = f", {per_core(ur) / per_core(floor[i // 2]):.2f}x the epoll L4 relay" if floor else ""
        relay_x.append(per_core(ur) / ngx)
        proxy_x.append(per_core(uh) / ngx)
        print(f"{i // 2 + 1:>3}  uring relay {ur[0]:.0f} req/s, {per_core(ur):.0f} per core, p99 {ur[2]:.2f} ms:"
              f" {relay_x[-1]:.2f}x nginx{past}")
        print(f"{i // 2 + 1:>3}  uring proxy {uh[0]:.0f} req/s, {per_core(uh):.0f} per core, p99 {uh[2]:.2f} ms:"
              f" {proxy_x[-1]:.2f}x nginx, {per_core(uh) / lg:.2f}x leafgate")
    print(f"io_uring relay per core / nginx per core: {min(relay_x):.2f}x .. {max(relay_x):.2f}x")
    print(f"io_uring proxy per core / nginx per core: {min(proxy_x):.2f}x .. {max(proxy_x):.2f}x")
if haproxy:
    # Each run's HAProxy against the same run's nginx and leafgate.
    haproxy_x = []
    for i, hx in enumerate(haproxy):
        ngx, lg = per_core(rows[2 * i]), per_core(rows[2 * i + 1])
        haproxy_x.append(per_core(hx) / ngx)
        print(f"{i + 1:>3}  HAProxy {hx[0]:.0f} req/s, {per_core(hx):.0f} per core, p99 {hx[2]:.2f} ms:"
              f" {haproxy_x[-1]:.2f}x nginx per core; leafgate {lg / per_core(hx):.2f}x HAProxy")
    print(f"HAProxy per core / nginx per core: {min(haproxy_x):.2f}x .. {max(haproxy_x):.2f}x")
if logged:
    # Each run's logged leafgate against the same run's leafgate without a log.
    log_x = []
    for i, row in enumerate(logged):
        lg = rows[2 * i + 1]
        log_x.append(per_core(row[:7]) / per_core(lg))
        user, kernel = split_us(row[:7])
        served = row[0] * row[4]
        print(f"{i + 1:>3}  leafgate+log {row[0]:.0f} req/s, {per_core(row[:7]):.0f} per core, p99 {row[2]:.2f} ms,"
              f" {user:.1f} + {kernel:.1f} us: {log_x[-1]:.2f}x leafgate without the log;"
              f" {row[7]:.0f} lines for about {served:.0f} requests")
    print(f"access log on / off per core: {min(log_x):.2f}x .. {max(log_x):.2f}x (goal >= 0.90x)")
if gateway:
    # Each run's HTTPRoute against the same run's TOML route, the same binary.
    gw_x = []
    for i, row in enumerate(gateway):
        lg = rows[2 * i + 1]
        gw_x.append(per_core(row) / per_core(lg))
        user, kernel = split_us(row)
        print(f"{i + 1:>3}  HTTPRoute with a header modifier {row[0]:.0f} req/s, {per_core(row):.0f} per core,"
              f" p99 {row[2]:.2f} ms, {user:.1f} + {kernel:.1f} us: {gw_x[-1]:.2f}x leafgate's TOML route")
    print(f"HTTPRoute / TOML route per core: {min(gw_x):.2f}x .. {max(gw_x):.2f}x (goal >= 0.95x)")
PY

[ "$H2" = 1 ] || exit 0
# h2_measure NAME URL LOAD PID...: one h2load run of H2_REQUESTS requests at LOAD
# (connections x streams); stores the row "req/s p50 p99 cpu elapsed user kernel" in ROW.
h2_measure() {
  local name=$1 url=$2 load=$3; shift 3
  local c=${load%x*} m=${load#*x} hz c0 c1 out log=$work/h2-$name.log
  hz=$(getconf CLK_TCK)
  c0=$(cpu_ticks_split "$@")
  out=$(timeout 300 taskset -c "$LOAD_CPU" h2load -t1 -c"$c" -m"$m" -n"$H2_REQUESTS" \
    --tls13-ciphers=TLS_AES_128_GCM_SHA256 --log-file="$log" "$url")
  c1=$(cpu_ticks_split "$@")
  printf '%s\n' "$out" >"$work/h2-$name.out"
  ROW=$(python3 - "$log" "$work/h2-$name.out" "${c0% *}" "${c1% *}" "${c0#* }" "${c1#* }" "$hz" <<'PY'
import re, sys
log, report = sys.argv[1], sys.argv[2]
u0, u1, s0, s1, hz = map(float, sys.argv[3:])
out = open(report).read()
done = re.search(r"finished in ([0-9.]+)(m?s), ([0-9.]+) req/s", out)
ok = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
status = re.search(r"status codes: (\d+) 2xx", out)
if not (done and ok and status) or ok.group(1) != ok.group(2) or status.group(1) != ok.group(1):
    sys.exit("h2load did not finish every request with a 2xx:\n" + out)
elapsed = float(done.group(1)) / (1000 if done.group(2) == "ms" else 1)
times = sorted(int(l.split("\t")[2]) for l in open(log) if l.count("\t") == 2)
pct = lambda p: times[min(len(times) - 1, int(p * len(times)))] / 1000
user, kernel = (u1 - u0) / hz, (s1 - s0) / hz
print(float(done.group(3)), pct(0.50), pct(0.99), user + kernel, elapsed, user, kernel)
PY
)
  printf '%-16s %-6s %s\n' "$name" "$load" "$ROW"
}

H2_LOADS=${H2_LOADS:-16x16 64x1}
H2_REQUESTS=${H2_REQUESTS:-200000}
echo "h2load -t1 -n$H2_REQUESTS on CPU $LOAD_CPU; each proxy on CPU $PROXY_CPU (columns: req/s p50 p99 ms, CPU elapsed user kernel s)"
H2_REQUESTS=20000 h2_measure warmup-nginx "http://127.0.0.1:$nx2/" 16x16 "${nginx_pids[@]}" >/dev/null
H2_REQUESTS=20000 h2_measure warmup-leafgate "http://127.0.0.1:$lg/" 16x16 "$lg_pid" >/dev/null
h2rows=()
for load in $H2_LOADS; do
  for run in $(seq 1 "$RUNS"); do
    h2_measure "nginx-h2c" "http://127.0.0.1:$nx2/" "$load" "${nginx_pids[@]}"; h2rows+=("h2c $load $run nginx $ROW")
    h2_measure "leafgate-h2c" "http://127.0.0.1:$lg/" "$load" "$lg_pid"; h2rows+=("h2c $load $run leafgate $ROW")
    h2_measure "nginx-tls" "https://127.0.0.1:$nxs/" "$load" "${nginx_pids[@]}"; h2rows+=("tls $load $run nginx $ROW")
    h2_measure "leafgate-tls" "https://127.0.0.1:$lgs/" "$load" "$lg_pid"; h2rows+=("tls $load $run leafgate $ROW")
  done
done
echo "load after h2: $(uptime)"
python3 - "${h2rows[@]}" <<'PY'
import sys
rows = {}
for r in sys.argv[1:]:
    proto, load, run, proxy, *v = r.split()
    rows[(proto, load, run, proxy)] = list(map(float, v))
print("h2 rows: proto load run | per core nginx leafgate ratio | p50 ms nginx leafgate | p99 ms nginx leafgate | user+kernel us nginx, leafgate")
for (proto, load, run, proxy), v in rows.items():
    if proxy != "nginx":
        continue
    n, l = v, rows[(proto, load, run, "leafgate")]
    core = lambda x: x[0] * x[4] / x[3]
    us = lambda x: f"{x[5] / (x[0] * x[4]) * 1e6:.1f} + {x[6] / (x[0] * x[4]) * 1e6:.1f}"
    worse = "worse" if l[2] > n[2] else "no worse"
    print(f"{proto:4} {load:6} {run:>3} | {core(n):8.0f} {core(l):8.0f} {core(l) / core(n):5.2f}x"
          f" | {n[1]:6.2f} {l[1]:6.2f} | {n[2]:6.2f} {l[2]:6.2f} ({worse}) | {us(n)}, {us(l)}")
PY

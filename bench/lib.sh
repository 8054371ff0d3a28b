# Shared helpers for bench/*.sh: install peers, free ports, wait for a port, wrk parsing.
# Sourced, not run.

need() {
  # need CMD PACKAGE: installs PACKAGE with apt-get when CMD is missing.
  local cmd=$1 pkg=$2
  if ! command -v "$cmd" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$cmd" ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get install -y -q "$pkg" >/dev/null 2>&1 || {
      $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "$pkg" >/dev/null
    }
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
  # wait_port PORT: up to 10 s for something to accept on 127.0.0.1:PORT.
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}

# wrk_run NAME URL [HOST]: runs wrk, prints "NAME req/s p99", stores REQS and P99_MS.
wrk_run() {
  local name=$1 url=$2 host=${3:-bench.example}
  local out
  out=$(wrk -t"${WRK_THREADS:-2}" -c"${WRK_CONNECTIONS:-64}" -d"${WRK_DURATION:-10s}" --latency \
    -H "Host: $host" "$url")
  REQS=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  P99_MS=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; print v}' <<<"$out")
  local errors
  errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out")
  printf '%-10s %12s req/s   p99 %8s ms   %s\n' "$name" "$REQS" "$P99_MS" "$errors"
}

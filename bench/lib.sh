# Shared helpers for bench/*.sh: install peers, free ports, wait for a port, wrk parsing.
# Sourced, not run.

need() {
  # need CMD PACKAGE: installs PACKAGE with apt-get when CMD is missing.
  local cmd=$1 pkg=$2
  if ! command -v "$cmd" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$cmd" ]; then
    install_pkg "$pkg"
  fi
}

install_pkg() {
  # install_pkg PACKAGE: apt-get install, refreshing the package lists if it is not found.
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -q "$1" >/dev/null 2>&1 || {
    $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "$1" >/dev/null
  }
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

# to_ms LATENCY: wrk's "812.00us" / "1.20ms" / "2.01s" as milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN { if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; print v }'
}

# wrk_run NAME URL [HOST]: runs wrk (pinned with `taskset -c $WRK_CPU` when set, and cut off
# by `timeout` a little after its duration), prints "NAME req/s p50 p99", stores REQS,
# P50_MS, P99_MS and REQ_COUNT (the requests completed, wrk's "N requests in" line).
wrk_run() {
  local name=$1 url=$2 host=${3:-bench.example}
  local duration=${WRK_DURATION:-10s} out pin=()
  [ -n "${WRK_CPU:-}" ] && pin=(taskset -c "$WRK_CPU")
  out=$(timeout $(( ${duration%s} + 15 )) "${pin[@]}" wrk -t"${WRK_THREADS:-2}" \
    -c"${WRK_CONNECTIONS:-64}" -d"$duration" --latency -H "Host: $host" "$url")
  REQS=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  REQ_COUNT=$(awk '/ requests in / {print $1}' <<<"$out")
  P50_MS=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  P99_MS=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  local errors
  errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out")
  printf '%-10s %12s req/s   p50 %7s ms   p99 %7s ms   %s\n' "$name" "$REQS" "$P50_MS" "$P99_MS" "$errors"
}

# cpu_ticks PID...: user + system clock ticks used so far by the given processes and their
# threads (fields 14 and 15 of /proc/PID/stat; the comm field may hold spaces, so the
# fields are counted after its closing parenthesis). cpu_ticks_split prints the two apart.
cpu_ticks() {
  local split
  split=$(cpu_ticks_split "$@")
  echo $(( ${split% *} + ${split#* } ))
}

cpu_ticks_split() {
  local user=0 system=0 pid rest
  for pid in "$@"; do
    rest=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
    set -- $rest
    user=$(( user + ${12} )); system=$(( system + ${13} ))
  done
  echo "$user $system"
}

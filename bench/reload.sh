#!/usr/bin/env bash
# Reload under load: wrk at about half of leafgate's capacity while the config (10,000
# routes) is rewritten 100 times. Prints the requests that failed during the reloads
# (goal: 0) and the time from the file write to the new route answering (goal: <= 50 ms),
# then the in-process split of one reload (TOML parse, whole typed parse, the reloader's
# cached parse with one route changed, snapshot build on the previous snapshot) and the
# memory the parse cache holds.
# leafgate runs on CPU 1; wrk and the reload tool on CPU 0.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
need wrk wrk
need python3 python3
ROUTES=${ROUTES:-10000}
ROUNDS=${ROUNDS:-100}

# SKIP_BUILD=1 runs the binaries already built (in $CARGO_TARGET_DIR or target/).
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -q -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

lg=$(free_port)
taskset -c 0 "$bin/leafgate-bench" reload-config "127.0.0.1:$lg" "$ROUTES" >"$work/leafgate.toml"
RUST_LOG=warn taskset -c 1 "$bin/leafgate" run --config "$work/leafgate.toml" 2>"$work/leafgate.log" &
wait_port "$lg"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Capacity first, then pace wrk to about half of it: each connection waits delay_ms
# between requests, so conns connections make about conns * 1000 / delay_ms req/s.
capacity=$(taskset -c 0 wrk -t2 -c32 -d3s "http://127.0.0.1:$lg/" | awk '/^Requests\/sec:/ {print int($2)}')
delay_ms=4
conns=$(( capacity * delay_ms / 2000 ))
[ "$conns" -lt 2 ] && conns=2
cat >"$work/pace.lua" <<LUA
function delay() return $delay_ms end
LUA
echo "capacity ~$capacity req/s; loading at ~$(( conns * 1000 / delay_ms )) req/s ($conns connections, ${delay_ms} ms apart)"

taskset -c 0 wrk -t2 -c$conns -d"${WRK_DURATION:-40s}" -s "$work/pace.lua" "http://127.0.0.1:$lg/" >"$work/wrk.out" &
wrk_pid=$!
sleep 1
taskset -c 0 "$bin/leafgate-bench" reload "$work/leafgate.toml" "127.0.0.1:$lg" "$ROUTES" "$ROUNDS" >"$work/reload.json"
wait "$wrk_pid"

echo "load before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/wrk.out" "$work/reload.json" <<'PY'
import json, re, sys
wrk = open(sys.argv[1]).read()
reload = json.load(open(sys.argv[2]))
total = int(re.search(r"(\d+) requests in", wrk).group(1))
non2xx = int((re.search(r"Non-2xx or 3xx responses: (\d+)", wrk) or [0, 0])[1])
sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", wrk)
socket_errors = sum(map(int, sock.groups())) if sock else 0
failed = non2xx + socket_errors
print(f"requests {total}, failed {failed} (non-2xx {non2xx}, socket errors {socket_errors}) (goal: 0)")
print(f"{reload['rounds']} reloads of {reload['routes']} routes: write -> live p50 {reload['p50_ms']} ms, p90 {reload['p90_ms']} ms, max {reload['max_ms']} ms (goal <= 50 ms)")
PY
echo "in process, median of 10 (CPU 1): $(taskset -c 1 "$bin/leafgate-bench" reload-phases "$ROUTES" 10)"

#!/usr/bin/env bash
# Hijacked-connection throughput and limiter accuracy, in one run.
#
# 1. Unlimited: a client upgrades through leafgate and pushes bytes for 10 s; the backend
#    measures what arrives. Peer: iperf3 straight over loopback for the same time.
#    Prints both and the ratio (goal >= 1.2x, issue 15).
# 2. Limits: the same through routes limited to 1 MiB/s, 100 MiB/s and 1 GiB/s; the rate
#    measured at the backend (after the first second, so the burst does not count) against
#    the configured one (goal: within 2%). Limited connections splice too (pipes lent per
#    burst), so the 1 GiB/s row measures the limiter, not a user-space copy.
#
# leafgate and the iperf3 server run on CPU 1; the pusher, the backend and the iperf3
# client on CPU 0. On two cores the pusher and the backend share CPU 0 and copy every byte
# out and in, while iperf3's ends have a core each; each run prints how busy each CPU was,
# so the bound is visible: leafgate's when CPU 1 is near 100%, the ends' when CPU 0 is.
# (Zero-copy ends, `vmsplice` and `splice` to /dev/null, were tried: on loopback they
# moved less than copying ends, as iperf3 -Z does.)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
need iperf3 iperf3
need python3 python3
SECONDS_EACH=${SECONDS_EACH:-10}

# SKIP_BUILD=1 runs the binaries already built (in $CARGO_TARGET_DIR or target/).
[ -n "${SKIP_BUILD:-}" ] || cargo build --release -q -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
coproc BACKEND { exec taskset -c 0 "$bin/leafgate-bench" serve; }
trap 'kill $(jobs -p) $BACKEND_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
read -r backend <&"${BACKEND[0]}"
lg=$(free_port); admin=$(free_port); ip=$(free_port)
cat >"$work/leafgate.toml" <<CONF
[admin]
bind = "127.0.0.1:$admin"
[timeouts]
upgraded_idle = "60s"
[[listener]]
name = "bench"
bind = "127.0.0.1:$lg"
[[route]]
host = "unlimited.bench"
backends = ["$backend"]
[[route]]
host = "1mib.bench"
backends = ["$backend"]
bandwidth = "1MiB/s"
[[route]]
host = "100mib.bench"
backends = ["$backend"]
bandwidth = "100MiB/s"
[[route]]
host = "1gib.bench"
backends = ["$backend"]
bandwidth = "1GiB/s"
CONF
RUST_LOG=warn taskset -c 1 "$bin/leafgate" run --config "$work/leafgate.toml" 2>"$work/leafgate.log" &
taskset -c 1 iperf3 -s -p "$ip" >/dev/null 2>&1 &
wait_port "$lg"; wait_port "$ip"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

rate_of() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["rate"])'; }
# Busy share of each CPU while a command runs, from /proc/stat: which side was the bound.
cpu_ticks() { awk '/^cpu[01] /{print $1, $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
busy_during() {
  local before after
  before=$(cpu_ticks); "$@"; after=$(cpu_ticks)
  python3 - "$before" "$after" >&2 <<'PY'
import sys
def parse(t): return {l.split()[0]: tuple(map(int, l.split()[1:])) for l in t.splitlines()}
a, b = parse(sys.argv[1]), parse(sys.argv[2])
print("  busy: " + ", ".join(f"{c} {100 * (b[c][0] - a[c][0]) / max(1, (b[c][0] - a[c][0]) + (b[c][1] - a[c][1])):.0f}%" for c in sorted(a)))
PY
}
lg_rate=$(busy_during taskset -c 0 "$bin/leafgate-bench" push "127.0.0.1:$lg" unlimited.bench "$SECONDS_EACH" | rate_of)
ip_rate=$(busy_during taskset -c 0 iperf3 -c 127.0.0.1 -p "$ip" -t "$SECONDS_EACH" -J \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8)')

python3 - "$lg_rate" "$ip_rate" <<'PY'
import sys
lg, ip = map(float, sys.argv[1:])
gib = 1 << 30
print(f"unlimited splice  leafgate {lg / gib:.2f} GiB/s   iperf3 loopback {ip / gib:.2f} GiB/s   ratio {lg / ip:.2f}x (goal >= 1.2x)")
PY

for spec in "1mib.bench 1048576" "100mib.bench 104857600" "1gib.bench 1073741824"; do
  set -- $spec
  got=$(busy_during taskset -c 0 "$bin/leafgate-bench" push "127.0.0.1:$lg" "$1" "$SECONDS_EACH" | rate_of)
  python3 - "$1" "$2" "$got" <<'PY'
import sys
name, want, got = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
err = (got - want) / want * 100
print(f"limit {name:<13} configured {want / 1048576:8.1f} MiB/s   measured {got / 1048576:8.2f} MiB/s   error {err:+.2f}% (goal within 2%)")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# Ingress provider at scale (issue 14): a kubesim root with INGRESSES Ingresses (each its
# own host, Service and EndpointSlice), leafgate (release) pinned to CPU 1, the simulator,
# upstreams and client on CPU 0. Measures the first sync (start -> every host answers) and
# one change (a backend moved; a new Ingress) -> served, p50/p90 over ROUNDS changes.
# Peer: the same kind of change through a TOML reload of INGRESSES routes
# (bench/reload.sh's method: temp file + rename, poll until the new host answers).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
INGRESSES=${INGRESSES:-10000}
ROUNDS=${ROUNDS:-20}

cargo build --release -q -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

echo "load before: $(uptime)"
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$bin/leafgate-bench" ingress "$bin/leafgate" "$INGRESSES" "$ROUNDS" >"$work/ingress.json"

# The peer: a TOML config of INGRESSES routes, reloaded ROUNDS times with one new host.
lg=$(free_port)
"$bin/leafgate-bench" reload-config "127.0.0.1:$lg" "$INGRESSES" >"$work/leafgate.toml"
RUST_LOG=warn taskset -c "${LEAFGATE_CPUS:-1}" "$bin/leafgate" run --config "$work/leafgate.toml" 2>"$work/leafgate.log" &
wait_port "$lg"
taskset -c "${CLIENT_CPUS:-0}" \
  "$bin/leafgate-bench" reload "$work/leafgate.toml" "127.0.0.1:$lg" "$INGRESSES" "$ROUNDS" >"$work/reload.json"
echo "load after: $(uptime)"

python3 - "$work/ingress.json" "$work/reload.json" <<'PY'
import json, sys
ing = json.load(open(sys.argv[1]))
rel = json.load(open(sys.argv[2]))
n = ing["ingresses"]
print(f"first sync of {n} Ingresses: {ing['first_sync_ms']} ms to serve (goal < 3 s; then a sweep of every host: {ing['sweep_all_hosts_ms']} ms)")
print(f"peer, TOML reload of {rel['routes']} routes + 1 host over {rel['rounds']} rounds: p50 {rel['p50_ms']} ms, p90 {rel['p90_ms']} ms")
for key, what in [("backend_change_ms", "backend moved"), ("new_ingress_ms", "new Ingress")]:
    p = ing[key]
    print(f"{what} -> served over {ing['rounds']} changes: p50 {p['p50']} ms, p90 {p['p90']} ms, max {p['max']} ms (goal: p90 <= 30 ms)")
    print(f"  ratio {what} / TOML reload: p50 {p['p50'] / rel['p50_ms']:.2f}, p90 {p['p90'] / rel['p90_ms']:.2f} (goal <= 2.5)")
PY

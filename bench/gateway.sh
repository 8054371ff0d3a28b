#!/usr/bin/env bash
# The Gateway API at scale (issue 46): a kubesim root with GATEWAYS=1 Gateway and ROUTES
# HTTPRoutes on it (each its own hostname, Service and EndpointSlice), leafgate (release)
# pinned to CPU 1, the simulator, upstreams and client on CPU 0 (bench/ingress.sh's
# method). Measures the first sync (start -> every host answers; goal < 3 s) and one change
# (a moved backend: its EndpointSlice lists another address; a new HTTPRoute) -> served,
# p50/p90 over ROUNDS changes (goal p90 <= 30 ms). For reference, the Ingress provider's
# figures with as many Ingresses, in the same run.
# PROFILE=dev runs the debug build (a smoke run at small scale on a shared machine: the
# figures then say nothing) instead of a release one.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUTES=${ROUTES:-10000}
ROUNDS=${ROUNDS:-20}
GATEWAYS=${GATEWAYS:-1}
profile=${PROFILE:-release}
target=${CARGO_TARGET_DIR:-$PWD/target}
case "$profile" in
  release) flags=(--release); bin=$target/release ;;
  dev) flags=(); bin=$target/debug ;;
  *) echo "PROFILE is release or dev, not $profile" >&2; exit 2 ;;
esac
if [ "$GATEWAYS" != 1 ]; then
  echo "GATEWAYS=1 is what this bench measures (one Gateway, every route on it)" >&2
  exit 2
fi

cargo build -q "${flags[@]}" -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "load before: $(uptime)"
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$bin/leafgate-bench" gateway "$bin/leafgate" "$ROUTES" "$ROUNDS" >"$work/gateway.json"
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$bin/leafgate-bench" ingress "$bin/leafgate" "$ROUTES" "$ROUNDS" >"$work/ingress.json"
echo "load after: $(uptime)"

python3 - "$work/gateway.json" "$work/ingress.json" "$profile" <<'PY'
import json, sys
gw = json.load(open(sys.argv[1]))
ing = json.load(open(sys.argv[2]))
if sys.argv[3] != "release":
    print(f"({sys.argv[3]} build: a smoke run, not a figure)")
n = gw["routes"]
print(f"first sync of 1 Gateway and {n} HTTPRoutes: {gw['first_sync_ms']} ms to serve (goal < 3 s; then a sweep of every host: {gw['sweep_all_hosts_ms']} ms)")
print(f"  Ingress provider, {ing['ingresses']} Ingresses: {ing['first_sync_ms']} ms")
for key, ikey, what, iwhat in [("backend_change_ms", "backend_change_ms", "moved backend", "Ingress backend moved"),
                               ("new_route_ms", "new_ingress_ms", "new HTTPRoute", "new Ingress")]:
    p, q = gw[key], ing[ikey]
    print(f"{what} -> served over {gw['rounds']} changes: p50 {p['p50']} ms, p90 {p['p90']} ms, max {p['max']} ms (goal: p90 <= 30 ms)")
    print(f"  {iwhat}: p50 {q['p50']} ms, p90 {q['p90']} ms, max {q['max']} ms")
PY

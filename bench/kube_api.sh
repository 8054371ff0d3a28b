#!/usr/bin/env bash
# The kube-api front (issue 12): `kubectl get pods -A` (the pinned kubectl, whole process)
# and the raw Table request it sends (`GET /api/v1/pods`, Accept as=Table), with PODS pods
# over LEAVES simulated leaves, with leafgate's built-in table and with the `pods-table`
# plugin; peer: the same client against one simulator holding every pod. leafgate runs on
# CPU 1, the leaves and clients on CPU 0.
# Then the watch costs (issue 24, `kube-api-watch`): WATCHERS idle watches for WATCH_SECONDS
# (leafgate's CPU), CHANGES changes reaching them all (latency), and 100 watches of a
# one-pod namespace beside another tenant's 4,000 churning pods (the CPU they add).
# Then the read-only kinds (issue 41, `kube-api-kinds`): the Table of DEPLOYMENTS
# deployments over LEAVES leaves (`GET /apis/apps/v1/deployments`, ROUNDS times, p50/p99;
# goal p50 <= 20 ms at 10,000 over 4 leaves) and leafgate's RSS before and after its
# leaves keep them (per 10,000 objects), beside the bytes `/status` counts for them.
# KINDS_ONLY=1 runs only that part.
set -euo pipefail
cd "$(dirname "$0")/.."
PODS=${PODS:-10000}
LEAVES=${LEAVES:-4}
ROUNDS=${ROUNDS:-20}
WATCHERS=${WATCHERS:-1000}
WATCH_SECONDS=${WATCH_SECONDS:-10}
CHANGES=${CHANGES:-20}
DEPLOYMENTS=${DEPLOYMENTS:-10000}
target=${CARGO_TARGET_DIR:-$PWD/target}

bash scripts/tools.sh
cargo build --release -q -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
if [ "${KINDS_ONLY:-0}" != 1 ]; then
(cd plugins && CARGO_TARGET_DIR="$target/plugins-wasm" cargo build --release -q --target wasm32-wasip2)
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$target/release/leafgate-bench" kube-api "$target/release/leafgate" \
  "$target/plugins-wasm/wasm32-wasip2/release/pods_table.wasm" "$PODS" "$LEAVES" "$ROUNDS"
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$target/release/leafgate-bench" kube-api-watch "$target/release/leafgate" \
  "$LEAVES" "$WATCHERS" "$WATCH_SECONDS" "$CHANGES"
fi
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$target/release/leafgate-bench" kube-api-kinds "$target/release/leafgate" \
  "$DEPLOYMENTS" "$LEAVES" "$ROUNDS"

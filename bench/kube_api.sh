#!/usr/bin/env bash
# The kube-api front (issue 12): `kubectl get pods -A` (the pinned kubectl, whole process)
# and the raw Table request it sends (`GET /api/v1/pods`, Accept as=Table), with PODS pods
# over LEAVES simulated leaves, with leafgate's built-in table and with the `pods-table`
# plugin; peer: the same client against one simulator holding every pod. leafgate runs on
# CPU 1, the leaves and clients on CPU 0.
set -euo pipefail
cd "$(dirname "$0")/.."
PODS=${PODS:-10000}
LEAVES=${LEAVES:-4}
ROUNDS=${ROUNDS:-20}
target=${CARGO_TARGET_DIR:-$PWD/target}

bash scripts/tools.sh
cargo build --release -q -p leafgate -p leafgate-tests --bin leafgate --bin leafgate-bench
(cd plugins && CARGO_TARGET_DIR="$target/plugins-wasm" cargo build --release -q --target wasm32-wasip2)
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$target/release/leafgate-bench" kube-api "$target/release/leafgate" \
  "$target/plugins-wasm/wasm32-wasip2/release/pods_table.wasm" "$PODS" "$LEAVES" "$ROUNDS"

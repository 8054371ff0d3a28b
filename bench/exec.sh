#!/usr/bin/env bash
# Exec through leafgate's node API against exec straight to the leaf (issue 11): stdout
# throughput of `head -c SIZE_MIB MiB /dev/zero` over SPDY, and the whole-call latency of
# ROUNDS execs of `true` (p50, p99), so the time leafgate adds to an exec's first byte is
# the difference. The leaf (kubesim) and the client run on CPU 0, leafgate on CPU 1, so the
# ratio measures leafgate, not contention for one core. Beside it, on leafgate's CPU, the two
# ceilings: a bare TCP relay (one more hop, nothing parsed) and a TLS-terminating relay over
# warm spare connections (the two handshakes per stream leafgate pays, none of its HTTP).
# Prints one JSON object: `added_ms` is leafgate's, `tcp_relay_added_ms` and
# `tls_relay_added_ms` the ceilings', `ratio` the throughput against straight.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-256}
ROUNDS=${ROUNDS:-300}

cargo build --release -q -p leafgate -p leafgate-tests --bin leafgate --bin leafgate-bench
bin=${CARGO_TARGET_DIR:-target}/release
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} taskset -c "${CLIENT_CPUS:-0}" \
  "$bin/leafgate-bench" exec "$bin/leafgate" "$SIZE_MIB" "$ROUNDS"

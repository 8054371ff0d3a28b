#!/usr/bin/env bash
# Exec through leafgate's node API against exec straight to the leaf (issue 11): stdout
# throughput of `head -c SIZE_MIB MiB /dev/zero` over SPDY, and the whole-call latency of
# ROUNDS execs of `true` (p50, p99), so the time leafgate adds to an exec's first byte is
# the difference. The leaf (kubesim) and the client run on CPU 0, leafgate on CPU 1, so the
# ratio measures leafgate, not contention for one core. Beside it, on leafgate's CPU, the two
# ceilings: a bare TCP relay (one more hop, nothing parsed) and a TLS-terminating relay over
# warm spare connections (the two handshakes per stream leafgate pays, none of its HTTP).
# `AWAKE=1` keeps the cores from sleeping meanwhile (see below). Prints one JSON object:
# `added_ms` is leafgate's, `tcp_relay_added_ms` and `tls_relay_added_ms` the ceilings',
# `ratio` the throughput against straight (and `tcp_relay_ratio`, `tls_relay_ratio` the
# relays' beside it), `kube_api` a tenant's exec through leafgate's kube-API front (bearer
# token, the leaf's own path) against the same exec straight, with leafgate's CPU per such
# exec.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-256}
ROUNDS=${ROUNDS:-300}

cargo build --release -q -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
bin=${CARGO_TARGET_DIR:-target}/release
leafgate=${LEAFGATE_BIN:-$bin/leafgate}
run=(env LEAFGATE_CPUS="${LEAFGATE_CPUS:-1}" taskset -c "${CLIENT_CPUS:-0}"
  "$bin/leafgate-bench" exec "$leafgate" "$SIZE_MIB" "$ROUNDS")
# What an idle core does decides much of a hop's cost: a virtual CPU that halts when idle
# (KVM's haltpoll with guest_halt_poll_ns=0, as on our machines) is woken through the host
# each time a message crosses to it. Said on stderr, beside the figures.
idle=/sys/devices/system/cpu/cpuidle
if [ -r "$idle/current_driver" ]; then
  poll=$(cat /sys/module/haltpoll/parameters/guest_halt_poll_ns 2>/dev/null || echo n/a)
  echo "cpuidle: driver $(cat "$idle/current_driver"), guest_halt_poll_ns $poll" >&2
fi
# AWAKE=1: a SCHED_IDLE spinner on each of the bench's CPUs, so no core halts while the
# others work and any runnable task takes the core at once. What the proxies add then is
# the hop without the host's wake-ups: the ceiling on a machine whose cores do not sleep.
# Untraced: the spinners would fill a `TRACE=1` recording.
if [ "${AWAKE:-0}" = 1 ]; then
  spinners=()
  cpus="${CLIENT_CPUS:-0},${LEAFGATE_CPUS:-1}"
  for cpu in ${cpus//,/ }; do
    chrt -i 0 taskset -c "$cpu" "$bin/leafgate-bench" spin &
    spinners+=($!)
  done
  trap 'kill "${spinners[@]}" 2>/dev/null' EXIT
  "${run[@]}"
  exit
fi
if [ "${TRACE:-0}" != 1 ]; then
  exec "${run[@]}"
fi
# TRACE=1: the same run under `perf record -a` on the socket and eventfd syscalls, then
# what each proxy does between a read and the write it causes (bench/exec_path.py). The
# recording costs CPU 0 (the client's and the leaf's) some time, so this run's latencies
# are not comparable with an untraced one; the per-proxy gaps are.
if ! command -v perf >/dev/null || ! perf stat -e syscalls:sys_enter_writev -- true >/dev/null 2>&1; then
  echo "TRACE=1 needs perf and the syscall tracepoints; running untraced" >&2
  exec "${run[@]}"
fi
# Not under /tmp: leafgate watches its config folder's parent, and perf's flushes there
# would wake its watcher all run long.
# TRACE_DIR=DIR keeps the recording and the bench's JSON there.
if [ -n "${TRACE_DIR:-}" ]; then
  mkdir -p "$TRACE_DIR"
  trace=$TRACE_DIR
else
  trace=$(mktemp -d "${CARGO_TARGET_DIR:-target}/exec-trace.XXXXXX")
fi
events=syscalls:sys_enter_recvfrom,syscalls:sys_exit_recvfrom,syscalls:sys_enter_writev
events+=,syscalls:sys_enter_sendto,syscalls:sys_enter_write,syscalls:sys_exit_accept4
perf record -q -a -e "$events" -o "$trace/perf.data" -- "${run[@]}" | tee "$trace/bench.json"
perf script -i "$trace/perf.data" -F pid,tid,cpu,time,event,trace 2>/dev/null \
  | python3 bench/exec_path.py "$trace/bench.json"
[ -n "${TRACE_DIR:-}" ] || rm -rf "$trace"

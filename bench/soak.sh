#!/usr/bin/env bash
# The soak (issue 42): leafgate under mixed load and changes for SOAK_MINUTES (default 10),
# sampled every 10 s, with the verdicts that say nothing leaks. The load, the changes, the
# samples and the verdicts are `leafgate-bench soak` (bench/src/bin/leafgate-bench/soak.rs):
# proxied HTTP/1.1 and h2, WebSockets, kube-api watches, execs and log follows, node-API
# execs against kubesim leaves; Ingress churn, a reload every 10 s, a leaf restarted every
# 2 minutes, the `faulty-router` fault plugin trapping on 1% of its calls.
#
# Writes SOAK_OUT (default target/soak) /soak.csv, verdicts.json, metrics.txt, leafgate.log
# and, unless SOAK_PLOT=0, soak.png (matplotlib, in a venv under target/). Prints the
# verdicts; exits non-zero when one fails. SOAK_PROFILE=dev runs the debug build (what CI
# has built already) instead of a release one. leafgate runs on CPU 1 (LEAFGATE_CPUS), the
# load and the simulators on CPU 0 (CLIENT_CPUS).
set -euo pipefail
cd "$(dirname "$0")/.."
SOAK_MINUTES=${SOAK_MINUTES:-10}
profile=${SOAK_PROFILE:-release}
target=${CARGO_TARGET_DIR:-$PWD/target}
out=${SOAK_OUT:-$target/soak}
case "$profile" in
  release) flags=(--release); bin=$target/release ;;
  dev) flags=(); bin=$target/debug ;;
  *) echo "SOAK_PROFILE is release or dev, not $profile" >&2; exit 2 ;;
esac

echo "==> soak: building ($profile)"
cargo build -q "${flags[@]}" -p leafgate -p leafgate-benches --bin leafgate --bin leafgate-bench
# The fault plugins as the tests build them (tests/src/plugins.rs): their own target dir.
(cd tests/fault-plugins && env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u CARGO_BUILD_TARGET \
  CARGO_TARGET_DIR="$target/fault-plugins-wasm" cargo build -q --release --target wasm32-wasip2)
faulty=$target/fault-plugins-wasm/wasm32-wasip2/release/faulty_router.wasm

# One core: leafgate and the load share it (the figures then say less, the verdicts hold).
if [ "$(nproc)" -lt 2 ]; then
  LEAFGATE_CPUS=${LEAFGATE_CPUS:-0}
  CLIENT_CPUS=${CLIENT_CPUS:-0}
fi

rm -rf "$out"
mkdir -p "$out"
# The bench and the leafgate it starts in a process group of their own (job control), so
# that whatever way this script ends, the group is stopped: a bench killed by a signal
# cannot stop its leafgate itself.
set -m
LEAFGATE_CPUS=${LEAFGATE_CPUS:-1} timeout $(( SOAK_MINUTES * 60 + 420 )) \
  taskset -c "${CLIENT_CPUS:-0}" "$bin/leafgate-bench" soak "$bin/leafgate" "$faulty" \
  $(( SOAK_MINUTES * 60 )) "$out" >"$out/verdicts.line" &
soak=$!
set +m
# (The bench's leafgate also dies with the bench: PR_SET_PDEATHSIG.)
trap 'kill -- -"$soak" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM HUP
status=0
wait "$soak" || status=$?
trap - EXIT
kill -- -"$soak" 2>/dev/null || true

if [ "${SOAK_PLOT:-1}" != 0 ] && [ -s "$out/soak.csv" ]; then
  venv=$target/soak-venv
  if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q matplotlib
  fi
  "$venv/bin/python" bench/soak_plot.py "$out/soak.csv" "$out/soak.png"
  echo "plot: $out/soak.png"
fi
if [ -s "$out/verdicts.json" ]; then
  python3 - "$out/verdicts.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
print(f"soak of {v['seconds']} s, {v['samples']} samples; calls (ok, failed): " +
      ", ".join(f"{k} {ok}/{failed}" for k, (ok, failed) in v["calls"].items()))
for name, check in v.items():
    if isinstance(check, dict) and "ok" in check:
        print(f"  {'PASS' if check['ok'] else 'FAIL'} {name}: {json.dumps(check['figures'])}")
print("verdict:", "PASS" if v["passed"] else "FAIL")
PY
else
  echo "the soak ended without verdicts (status $status); leafgate's log: $out/leafgate.log" >&2
  tail -20 "$out/leafgate.log" >&2 || true
fi
exit "$status"

#!/usr/bin/env bash
# Sets up a fresh machine for leafgate's tests and runs all of them: format check, clippy
# with -D warnings, and every test in the workspace (end-to-end ones included).
# CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

# A fresh clone builds everything once, so incremental compilation only adds its caches
# (gigabytes for the gateway's test binaries, which link wasmtime); CI machines can be
# short of disk. Set CARGO_INCREMENTAL=1 to keep them while iterating.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
mkdir -p target
echo "==> free disk for target/: $(df -h --output=avail target | tail -1 | tr -d ' ')"

# The toolchain pieces the project needs: rustfmt, clippy, and the wasm32-wasip2 target
# the plugins are built for.
if command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  rustup target add wasm32-wasip2
fi

# The plugin workspaces build for wasm32-wasip2, apart from the gateway's.
wasm_workspaces=(plugins tests/fault-plugins)

echo "==> cargo fmt --check"
cargo fmt --all --check
for ws in "${wasm_workspaces[@]}"; do
  (cd "$ws" && cargo fmt --all --check)
done

echo "==> cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
for ws in "${wasm_workspaces[@]}"; do
  (cd "$ws" && cargo clippy --target wasm32-wasip2 --all-targets -- -D warnings)
done

# The pinned kubectl for the kubesim tests (into target/tools).
scripts/tools.sh

# Debian's nginx, which the access log's `combined` lines are compared with byte for byte
# (tests/tests/e2e/access_log.rs), as bench/ installs it.
source bench/lib.sh
need nginx nginx-light

echo "==> cargo test --workspace"
cargo test --workspace

# The routes listeners' suites, and the API fronts' (whose upgrades are read in place),
# again with every request served by hyper alone: the HTTP/1.1 fast path (on by default)
# must not be what makes them pass.
echo "==> proxy and API-front suites on hyper's path (http1_fast_path = false)"
# `--workspace` resolves features as the run above did, so this builds only the e2e test
# binary again (with the other feature flag's code) and reuses every crate as it is.
LEAFGATE_TEST_HTTP1_FAST_PATH=off cargo test --workspace --test e2e -- \
  proxy:: connections:: hijack:: hostile:: kube_api:: node_api:: kosmos:: gateway_api::

# A 2-minute soak (issue 42) on the debug build the tests used: its verdicts only (no
# plot). Bounded by its own timeout; it stops every process it started however it ends.
echo "==> soak (2 minutes, bench/soak.sh)"
SOAK_MINUTES=2 SOAK_PROFILE=dev SOAK_PLOT=0 bash bench/soak.sh

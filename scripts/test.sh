#!/usr/bin/env bash
# Sets up a fresh machine for leafgate's tests and runs all of them: format check, clippy
# with -D warnings, and every test in the workspace (end-to-end ones included).
# CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

# The toolchain pieces the project needs: rustfmt, clippy, and the wasm32-wasip2 target
# the plugins are built for.
if command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  rustup target add wasm32-wasip2
fi

echo "==> cargo fmt --check"
cargo fmt --all --check
if [ -f plugins/Cargo.toml ]; then
  (cd plugins && cargo fmt --all --check)
fi

echo "==> cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
if [ -f plugins/Cargo.toml ]; then
  (cd plugins && cargo clippy --target wasm32-wasip2 --all-targets -- -D warnings)
fi

echo "==> cargo test --workspace"
cargo test --workspace

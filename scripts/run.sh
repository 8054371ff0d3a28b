#!/usr/bin/env bash
# Builds leafgate (release) on a fresh machine and runs it with config/leafgate.toml, or
# with the config given as the first argument.
set -euo pipefail
cd "$(dirname "$0")/.."
config="${1:-config/leafgate.toml}"
if command -v rustup >/dev/null; then
  rustup target add wasm32-wasip2
fi
if [ -f plugins/Cargo.toml ]; then
  (cd plugins && cargo build --release --target wasm32-wasip2)
fi
cargo build --release -p leafgate
exec target/release/leafgate run --config "$config"

#!/usr/bin/env bash
# Builds leafgate (release) on a fresh machine and runs it with config/leafgate.toml, or
# with the config given as the first argument. Plugins are built separately (see
# plugins/README.md); the default config needs none.
set -euo pipefail
cd "$(dirname "$0")/.."
config="${1:-config/leafgate.toml}"
if ! command -v cargo >/dev/null; then
  echo "leafgate needs a Rust toolchain: https://rustup.rs" >&2
  exit 1
fi
cargo build --release -p leafgate
exec target/release/leafgate run --config "$config"

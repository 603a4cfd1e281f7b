#!/usr/bin/env bash
# Build the separate virtual environment that holds LiteLLM's proxy, the peer
# bench/gateway.py measures our gateway against. LiteLLM's proxy extra pulls in
# its own web stack and many provider SDKs, so it lives apart from the
# service's own environment, in an ignored folder. Prints the folder.
#
# The version is pinned (LITELLM_VERSION overrides it): one LiteLLM release on
# the registry was compromised (1.107.0), so the peer is never "latest".
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${LITELLM_PEER_VENV:-$ROOT/.cache/litellm-venv}"
PY="${PYTHON:-python3}"
VERSION="${LITELLM_VERSION:-1.106.12}"
if [ "$VERSION" = "1.107.0" ]; then
  echo "refusing LiteLLM 1.107.0: that release was compromised" >&2
  exit 2
fi
if [ -x "$VENV/bin/litellm" ] && "$VENV/bin/python" -c "import litellm.proxy.proxy_server" 2>/dev/null \
   && [ "$("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("litellm"))')" = "$VERSION" ]; then
  echo "$VENV"
  exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "litellm[proxy]==$VERSION"
"$VENV/bin/python" -c "import litellm.proxy.proxy_server" >/dev/null
echo "$VENV"

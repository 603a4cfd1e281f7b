#!/usr/bin/env bash
# Build the separate virtual environment that holds the reference openenv-core
# peer (client and server) used by the interop tests and bench/openenv.py.
# openenv-core 0.3.0 hard-requires gradio, fastmcp, pandas and more, so it lives
# apart from the service's own environment.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${OPENENV_PEER_VENV:-$ROOT/.cache/openenv-venv}"
PY="${PYTHON:-python3}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import openenv.core, uvloop" 2>/dev/null; then
  echo "$VENV"
  exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "openenv-core==0.3.0" "uvicorn[standard]>=0.30" "websockets>=12"
echo "$VENV"

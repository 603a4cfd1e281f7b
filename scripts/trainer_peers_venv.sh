#!/usr/bin/env bash
# Build the separate virtual environment holding the real TRL and verl packages, used by
# tests/services/inference/train/test_trainer_peers.py to run their own data code on our export.
# Both declare heavy dependency trees (verl: vllm, wandb, hydra, peft, ...) that their data and loss
# code does not import, so trl, verl and ray install with --no-deps beside only the light packages
# those modules import. Versions keep inside verl's own pins (transformers < 5.11, tensordict <= 0.10).
# torch is the pinned CPU build, taken from local disk. Nothing comes from the system site-packages.
# Prints the venv's folder; exits non-zero (loudly) when it cannot be built.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${TRAINER_PEERS_VENV:-$ROOT/.venv-trainers}"
PY="${PYTHON:-python3}"
STAMP="$VENV/.built-v2"
IMPORTS="import trl.trainer.sft_trainer, trl.trainer.grpo_trainer, verl, verl.trainer.ppo.core_algos, datasets"
if [ -f "$STAMP" ] && "$VENV/bin/python" -c "$IMPORTS" 2>/dev/null; then
  echo "$VENV"
  exit 0
fi
rm -rf "$VENV"
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
"${PIP[@]}" "torch==2.13.0" >&2
"${PIP[@]}" "transformers==5.10.4" "datasets==5.2.0" "accelerate==1.15.0" "tensordict==0.10.0" \
  "omegaconf==2.4.0" "codetiming==1.4.0" "pyarrow" "numpy" \
  "msgpack" "protobuf" "requests" "jsonschema" "click" "pyyaml" >&2
"${PIP[@]}" --no-deps "trl==1.16.0" "verl==0.9.1" "ray==2.60.0" >&2
"$VENV/bin/python" -c "$IMPORTS" >&2
touch "$STAMP"
echo "$VENV"

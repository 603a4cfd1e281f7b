"""The lint-clean part of the tree stays clean: ruff over it, with the project's rule set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The whole tree is held to the rule set; `make lint` adds mypy strict.
LINT_PATHS = ["shared", "services", "migrations", "bench", "tests"]


def test_lint_paths_exist() -> None:
    missing = [p for p in LINT_PATHS if not (ROOT / p).exists()]
    assert missing == []


def test_ruff_finds_nothing() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *LINT_PATHS],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All checks passed" in proc.stdout

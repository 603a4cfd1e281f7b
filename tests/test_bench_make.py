"""`make bench` builds every peer a bench compares against before the first bench runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_make_bench_builds_the_peers_first() -> None:
    dry = subprocess.run(["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    lines = dry.stdout.splitlines()
    first_bench = next(i for i, line in enumerate(lines) if re.search(r"for b in .*bench/\w+\.py", line))
    peers = [i for i, line in enumerate(lines) if re.search(r"scripts/(litellm|openenv)_peer_venv\.sh", line)]
    assert len(peers) == 2 and max(peers) < first_bench, dry.stdout
    # Each peer script named by a bench exists in scripts/ (bench/gateway.py names LiteLLM's).
    named = set(re.findall(r"scripts/(\w+_peer_venv\.sh)", "".join(p.read_text() for p in (ROOT / "bench").glob("*.py"))))
    assert named and all((ROOT / "scripts" / n).exists() for n in named)


# Benches whose figures have no same-run baseline to stand next to (demo_spread: a spread target only).
_NO_HEADLINE = {"__init__", "demo_spread"}


def test_every_bench_imports_and_reports_a_headline() -> None:
    # In a child process: the benches' imports (torch, the engine, ...) stay out of the suite's process.
    names = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if p.stem != "__init__")
    code = "import importlib, sys\nfor n in sys.argv[1:]: importlib.import_module('bench.' + n)\n"
    run = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]  # a bench that no longer imports fails here, not in make bench
    silent = [n for n in names if n not in _NO_HEADLINE and "headline(" not in (ROOT / "bench" / f"{n}.py").read_text()]
    assert silent == []

"""`make bench` builds every peer a bench compares against before the first bench runs."""

from __future__ import annotations

import re
import subprocess
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

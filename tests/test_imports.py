"""The import contract (``[tool.importlinter]`` in pyproject.toml): services meet only through shared.

``shared`` imports no service; each service imports ``shared`` and itself
only; no service imports the composition (all-in-one app, CLI, demo). No
contract carries an exception.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _run() -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_import_contracts_are_kept() -> None:
    result = _run()
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "3 kept, 0 broken" in result.stdout


def test_no_contract_has_exceptions() -> None:
    """Services meet only through shared: a new cross-service import cannot be waved through."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert [c["name"] for c in config["contracts"] if c.get("ignore_imports")] == []


def test_every_exception_still_exists() -> None:
    """An exception whose import is gone must leave the list (the contract only shrinks)."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for contract in config["contracts"]:
        for line in contract.get("ignore_imports", []):
            importer, imported = (part.strip() for part in line.split("->"))
            source = REPO_ROOT / (importer.replace(".", "/") + ".py")
            text = source.read_text() if source.exists() else ""
            module, _, name = imported.rpartition(".")
            assert (f"import {imported}" in text or f"from {imported} import" in text
                    or f"from {module} import {name}" in text), f"stale exception: {line}"


#: Tables each service owns; another service reaches them through the owner's API only.
_OWNED_ROWS = {"services.rollout": {"RolloutJobRow", "TrajectoryGroupRow", "TrajectoryRow"}}


def _row_imports(package: Path) -> set[str]:
    import ast

    names: set[str] = set()
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "shared.db.models":
                names |= {alias.name for alias in node.names}
    return names


def test_the_reward_service_reads_no_rollout_table() -> None:
    """Re-scoring reads a job's trajectories through the rollout API; its own rows name the job."""
    assert not _row_imports(REPO_ROOT / "services" / "reward") & _OWNED_ROWS["services.rollout"]


def test_the_rollout_service_reads_no_reward_table() -> None:
    """Rewards reach the rollout service through the reward service's client (REST or its app in-process);
    its own ``trajectory.reward`` is the copy it keeps. Import contracts see modules, not names, so the
    source is read: no reward table model, no SQL naming the table, no reward service module."""
    import re

    table_sql = re.compile(r"\b(from|join|into|update)\s+reward(_spec)?\b", re.IGNORECASE)
    offenders = []
    for path in sorted((REPO_ROOT / "services" / "rollout").rglob("*.py")):
        text = path.read_text()
        found = [word for word in ("RewardRow", "RewardSpecRow", "services.reward") if word in text]
        found += [m.group(0) for m in table_sql.finditer(text)]
        if found:
            offenders.append(f"{path.relative_to(REPO_ROOT)}: {', '.join(found)}")
    assert offenders == []

"""Scoring a JSONL file row by row (the ``trajforge score`` command's engine, no terminal I/O).

Every input line gives exactly one output line: a scored row carries
``rewards`` (provenance records) and ``reward`` (the weighted total); a line
that is not JSON, not a trajectory, or has no usable ground truth is written
back with ``reward: null``, ``reward_error`` (the full reason) and
``reward_failure`` (a short kind the summary groups by). Nothing is dropped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from services.reward.errors import RewardSpecError
from services.reward.ground_truth import ground_truth_object
from services.reward.service import ScoredTrajectory, score_trajectory
from services.reward.spec import RewardSpec, check_spec
from shared.errors import InvalidInput
from shared.jsonl import JsonlRecord, iter_jsonl_path
from shared.schema import Trajectory
from shared.skills import parse_skill, validation_message

__all__ = ["FileSummary", "load_spec_file", "score_record", "score_records"]


def load_spec_file(path: Path) -> RewardSpec:
    """A spec from YAML: ``components`` (name, weight, params) or a skill file's ``reward_weights``."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RewardSpecError(f"cannot read reward spec {path.name}: {exc}") from exc
    if not isinstance(data, dict) or not ({"components", "reward_weights"} & data.keys()):
        raise RewardSpecError(f"{path.name} needs a 'components' list or a skill's 'reward_weights' mapping")
    try:
        if "components" in data:
            spec = RewardSpec.model_validate({k: v for k, v in data.items() if k in ("components", "normalise")})
        elif "skill_name" in data:
            spec = RewardSpec.from_skill(parse_skill(data, source=path.name))
        else:
            spec = RewardSpec.from_skill_weights(data["reward_weights"], **(data.get("reward_params") or {}))
    except ValidationError as exc:
        message, field = validation_message(exc)
        raise RewardSpecError(f"{path.name} is not a valid reward spec: {message}", param=field) from None
    except InvalidInput as exc:
        raise RewardSpecError(f"{path.name} is not a valid reward spec: {exc}", param=exc.param) from None
    except (AttributeError, TypeError, ValueError) as exc:
        raise RewardSpecError(f"{path.name} is not a valid reward spec: {exc}") from exc
    check_spec(spec)
    return spec


def _keep_input(row: dict[str, Any]) -> dict[str, Any]:
    # An input's own reward fields are kept under a new name, never overwritten.
    moved = {f"input_{k}": row[k] for k in ("reward", "rewards") if k in row}
    return {**{k: v for k, v in row.items() if k not in ("reward", "rewards")}, **moved}


def _failed(row: dict[str, Any], kind: str, reason: str) -> dict[str, Any]:
    return {**_keep_input(row), "rewards": [], "reward": None, "reward_status": "failed", "reward_failure": kind,
            "reward_error": reason}


_KINDS = {"empty trajectory: no messages": "empty_trajectory", "rollout_error": "rollout_error"}


def _scored_row(row: dict[str, Any], scored: ScoredTrajectory) -> dict[str, Any]:
    out = {**_keep_input(row), "rewards": [r.model_dump(mode="json") for r in scored.records], "reward": scored.score,
           "reward_status": scored.status}
    if scored.status != "ok":
        out |= {"reward_failure": _KINDS.get(scored.error or "", "component_failed"), "reward_error": scored.error}
    return out


def score_record(record: JsonlRecord, spec: RewardSpec, *, ground_truth_key: str = "ground_truth") -> dict[str, Any]:
    """One output row for one input line; never raises."""
    if not record.ok:
        raw = record.raw.decode("utf-8", "replace")
        return _failed({"line": record.line_no, "raw": raw}, "bad_line", record.error or "unreadable line")
    row = record.value if isinstance(record.value, dict) else {"line": record.line_no, "value": record.value}
    if not isinstance(record.value, dict):
        return _failed(row, "not_an_object", f"line {record.line_no} is JSON but not an object")
    try:
        traj = Trajectory.model_validate({k: v for k, v in row.items() if k not in ("rewards", "reward")})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _failed(row, "invalid_trajectory", f"not a trajectory: {where}: {first.get('msg')}")
    truth, reason = ground_truth_object(row.get(ground_truth_key), f"'{ground_truth_key}'")
    if truth is None:
        return _failed(row, "no_ground_truth" if reason and "has no" in reason else "bad_ground_truth", reason or "")
    try:
        return _scored_row(row, score_trajectory(traj, spec, truth))
    except Exception as exc:  # noqa: BLE001 - one row's scorer failure must not stop the file
        return _failed(row, "scoring_raised", f"{type(exc).__name__}: {exc}")


@dataclass(slots=True)
class FileSummary:
    """Counts and score statistics of one scoring run."""

    count: int = 0
    scores: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)

    def add(self, out: dict[str, Any]) -> None:
        """Account for one output row."""
        self.count += 1
        score = out.get("reward")
        if isinstance(score, (int, float)) and math.isfinite(score):
            self.scores.append(float(score))
        if out.get("reward_failure"):
            self.failures[out["reward_failure"]] += 1

    def stats(self) -> dict[str, float | None]:
        """Mean, min and max of the scored rows (None when nothing scored)."""
        if not self.scores:
            return {"mean": None, "min": None, "max": None}
        return {"mean": sum(self.scores) / len(self.scores), "min": min(self.scores), "max": max(self.scores)}


def score_records(path: Path, spec: RewardSpec, *, ground_truth_key: str = "ground_truth") -> Iterator[dict[str, Any]]:
    """Output rows for every line of a JSONL file, in order."""
    for record in iter_jsonl_path(path):
        yield score_record(record, spec, ground_truth_key=ground_truth_key)

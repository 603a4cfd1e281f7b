"""``trajforge train`` spec files: rounds, optimiser, staleness rule, and the rollout job of each round."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.errors import InvalidInput
from shared.jsonl import iter_jsonl_path

__all__ = ["TrainSpec", "TrainSpecError", "load_train_spec"]


class TrainSpecError(InvalidInput):
    """A train spec that cannot run; the message names the file and the field."""

    code = "invalid_train_spec"


class TrainSpec(BaseModel):
    """One training run. ``rollout`` is a ``POST /v1/rollouts`` body; each round takes
    ``tasks_per_round`` of its tasks (cycling through them) and a fresh sampling seed."""

    model_config = ConfigDict(extra="forbid")

    rounds: int = Field(4, ge=1, le=10_000)
    tasks_per_round: int = Field(4, ge=1)
    rollout: dict[str, Any]
    #: HF model directory the trainer starts from; empty: the local engine's bundled model (same weights).
    model_path: str = ""
    learning_rate: float = Field(1e-5, gt=0, le=1.0)
    clip_eps: float = Field(0.2, gt=0, lt=1)
    kl_coef: float = Field(0.02, ge=0)
    #: Optimiser passes over each round's batch (one step per pass).
    epochs: int = Field(1, ge=1, le=64)
    #: Trajectories sampled more than this many weight versions behind the trainer are dropped.
    max_staleness: int = Field(0, ge=0)
    #: One policy-gradient step per this many finished groups, taken while the rest of the round samples.
    groups_per_step: int = Field(1, ge=1)
    #: Submit the next round's job when this round's last group lands (before its last step and the
    #: weight push), so sampling never waits on training; its first groups then sample the previous
    #: weights and are one version stale, so this needs ``max_staleness`` ≥ 1.
    overlap_rounds: bool = False
    max_grad_norm: float = Field(1.0, gt=0)
    #: Train only the top N transformer layers (and the final norm); 0 trains every weight. Fewer
    #: layers make the CPU step several times cheaper: nothing below them needs a backward pass.
    trainable_layers: int = Field(0, ge=0)
    #: Where weights, history.json and the reward plot go.
    out_dir: str = "out/train"
    #: A trajectory with at least this reward counts as solved (the success rate per round).
    success_reward: float = 0.99
    seed: int = 0

    @model_validator(mode="after")
    def _rollout_has_tasks(self) -> TrainSpec:
        tasks = self.rollout.get("tasks")
        if not isinstance(tasks, list) or not tasks:
            raise ValueError("rollout.tasks must be a non-empty list of tasks")
        if self.rollout.get("mode", "tokens") != "tokens":
            raise ValueError("rollout.mode must be 'tokens': the gradient step needs the sampled token ids")
        if self.overlap_rounds and self.max_staleness < 1:
            raise ValueError("overlap_rounds samples the next round partly under the previous weights: "
                             "set max_staleness to 1 or more, or overlap_rounds to false")
        return self

    def round_body(self, index: int) -> dict[str, Any]:
        """The rollout job of round ``index``: the next slice of tasks, a per-round seed."""
        tasks: list[Any] = self.rollout["tasks"]
        start = (index * self.tasks_per_round) % len(tasks)
        picked = [tasks[(start + i) % len(tasks)] for i in range(min(self.tasks_per_round, len(tasks)))]
        sampling = dict(self.rollout.get("sampling") or {})
        sampling["seed"] = int(sampling.get("seed", self.seed)) + 100_003 * index
        return {**self.rollout, "tasks": picked, "sampling": sampling, "mode": "tokens"}


def _with_tasks_file(spec_path: Path, rollout: dict[str, Any]) -> dict[str, Any]:
    body = dict(rollout)
    tasks_path = spec_path.parent / str(body.pop("tasks_file"))
    try:
        records = list(iter_jsonl_path(tasks_path))
    except OSError as exc:
        raise TrainSpecError(f"{spec_path}: rollout.tasks_file {tasks_path.name}: {exc}",
                             param="rollout.tasks_file") from exc
    bad = next((r for r in records if not r.ok), None)
    if bad is not None:
        raise TrainSpecError(f"{tasks_path.name} line {bad.line_no}: {bad.error}", param="rollout.tasks_file")
    tasks = [r.value for r in records if r.value is not None]
    return {**body, "tasks": [*(body.get("tasks") or []), *tasks]}


def load_train_spec(path: Path) -> tuple[TrainSpec, Path]:
    """The spec in ``path`` and its output folder (resolved against the spec's folder)."""
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise TrainSpecError(f"{path}: cannot read the train spec: {exc}") from exc
    if not isinstance(raw, dict):
        raise TrainSpecError(f"{path}: a train spec is a mapping (rounds, rollout, ...)")
    rollout = raw.get("rollout")
    if isinstance(rollout, dict) and "tasks_file" in rollout:
        raw["rollout"] = _with_tasks_file(path, rollout)
    try:
        spec = TrainSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "spec"
        raise TrainSpecError(f"{path}: {where}: {first['msg']}", param=where) from exc
    return spec, Path(spec.out_dir)

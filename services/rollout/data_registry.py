"""``DataManagerRegistry``: data managers keyed by ``(train_backend, service_mode)``.

Built in, as the reference lists them:

- ``("verl", "train")`` -> ``VerlDataManager``: token trajectories to the padded
  tensor batch a verl actor trains on (``prompts`` left-padded, ``responses``
  right-padded, ``input_ids``, ``attention_mask``, ``position_ids``,
  ``response_mask``, ``old_log_probs``, ``token_level_scores`` with the reward on
  the last response token), as a ``verl.DataProto`` when verl is installed and a
  dict of tensors otherwise.
- ``("verl", "infer")`` -> ``InferDataManager``: the tasks fed to rollouts, from
  a list of rows or a JSONL file, as ``AgentTask``s (bad lines counted, skipped).

``registry`` is the global instance.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from services.rollout.agents.registry import JsonlTasks, ListTasks
from shared.errors import InvalidInput
from shared.schema import AgentTask, Trajectory

__all__ = ["DataManagerRegistry", "InferDataManager", "VerlDataManager", "registry"]


class DataManagerRegistry:
    """Data manager classes by ``(train_backend, service_mode)``."""

    def __init__(self) -> None:
        self._classes: dict[tuple[str, str], type] = {}

    def register(self, train_backend: str, service_mode: str, cls: type) -> None:
        """Add or replace the class for ``(train_backend, service_mode)``."""
        if not isinstance(cls, type):
            raise InvalidInput(f"a data manager must be a class, not {type(cls).__name__}", param="cls")
        self._classes[(train_backend, service_mode)] = cls

    def get_class(self, train_backend: str, service_mode: str) -> type | None:
        """The registered class, or ``None``."""
        return self._classes.get((train_backend, service_mode))

    def keys(self) -> list[tuple[str, str]]:
        """Registered keys, sorted."""
        return sorted(self._classes)


class InferDataManager:
    """Rollout tasks from rows (dicts) or a JSONL path; iterating yields ``AgentTask``s."""

    def __init__(self, source: str | Path | Sequence[dict[str, Any]]) -> None:
        self._tasks: ListTasks | JsonlTasks = (JsonlTasks(source) if isinstance(source, (str, Path))
                                               else ListTasks(list(source)))

    @property
    def errors(self) -> list[tuple[int, str]]:
        """(line, error) of every JSONL line that was skipped."""
        return self._tasks.errors if isinstance(self._tasks, JsonlTasks) else []

    def __iter__(self) -> Iterator[AgentTask]:
        return iter(self._tasks)

    def batches(self, size: int) -> Iterator[list[AgentTask]]:
        """Tasks in batches of ``size`` (the last may be short)."""
        if size < 1:
            raise InvalidInput("batch size must be >= 1", param="size")
        batch: list[AgentTask] = []
        for task in self:
            batch.append(task)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch


class VerlDataManager:
    """Token trajectories -> verl's training batch (see the module docstring for the fields)."""

    def __init__(self, pad_token_id: int = 0) -> None:
        self.pad_token_id = pad_token_id

    def to_tensors(self, trajectories: Iterable[Trajectory]) -> dict[str, Any]:
        """The batch as a dict of torch tensors (one row per trajectory)."""
        import torch

        rows = list(trajectories)
        missing = [t.id for t in rows if t.tokens is None]
        if missing or not rows:
            raise InvalidInput(f"verl trains on token trajectories; no token data on {missing or 'an empty batch'}",
                               param="trajectories")
        p_len = max(len(t.tokens.prompt_ids) for t in rows if t.tokens)
        r_len = max(len(t.tokens.response_ids) for t in rows if t.tokens)
        prompts = torch.full((len(rows), p_len), self.pad_token_id, dtype=torch.long)
        responses = torch.full((len(rows), r_len), self.pad_token_id, dtype=torch.long)
        p_mask = torch.zeros((len(rows), p_len), dtype=torch.long)
        r_mask = torch.zeros((len(rows), r_len), dtype=torch.long)
        loss = torch.zeros((len(rows), r_len), dtype=torch.long)
        old = torch.zeros((len(rows), r_len), dtype=torch.float32)
        scores = torch.zeros((len(rows), r_len), dtype=torch.float32)
        for i, traj in enumerate(rows):
            self._fill(i, traj, prompts, responses, p_mask, r_mask, loss, old, scores)
        attention = torch.cat([p_mask, r_mask], dim=1)
        return {"prompts": prompts, "responses": responses, "input_ids": torch.cat([prompts, responses], dim=1),
                "attention_mask": attention, "position_ids": (attention.cumsum(dim=1) - 1).clamp(min=0),
                "response_mask": loss, "old_log_probs": old, "token_level_scores": scores}

    @staticmethod
    def _fill(i: int, traj: Trajectory, *out: Any) -> None:
        prompts, responses, p_mask, r_mask, loss, old, scores = out
        tok = traj.tokens
        assert tok is not None
        p, r = len(tok.prompt_ids), len(tok.response_ids)
        if p:
            prompts[i, -p:] = _tensor(tok.prompt_ids)
            p_mask[i, -p:] = 1
        if r:
            responses[i, :r] = _tensor(tok.response_ids)
            r_mask[i, :r] = 1
            loss[i, :r] = _tensor(tok.loss_mask or [1] * r)
            old[i, :r] = _tensor([lp or 0.0 for lp in tok.logprobs] if tok.logprobs else [0.0] * r, float)
            scores[i, r - 1] = float(traj.reward or 0.0)

    def __call__(self, trajectories: Iterable[Trajectory]) -> Any:
        """The batch as a ``verl.DataProto`` when verl is installed, else the dict of tensors."""
        tensors = self.to_tensors(trajectories)
        try:
            verl = importlib.import_module("verl")
        except ImportError:
            return tensors
        return verl.DataProto.from_dict(tensors=tensors)


def _tensor(values: Sequence[Any], kind: type = int) -> Any:
    import torch

    return torch.tensor(values, dtype=torch.long if kind is int else torch.float32)


registry = DataManagerRegistry()
registry.register("verl", "train", VerlDataManager)
registry.register("verl", "infer", InferDataManager)

"""In-process backend of ``OpenEnv``: an env class run inside this process, no network."""

from __future__ import annotations

from typing import Any

from services.envs.base import Env
from shared.errors import InvalidInput
from shared.plugins import load_object
from shared.schema import StepResult

__all__ = ["LocalBackend", "load_class", "normalise_result"]


def load_class(ref: str | type) -> type:
    """A class from itself, ``module:Class`` or ``module.Class``."""
    if isinstance(ref, type):
        return ref
    cls = load_object(ref, what="env class", param="env_cls")
    if not isinstance(cls, type):
        raise InvalidInput(f"{ref!r} is not a class.", param="env_cls")
    return cls


def normalise_result(result: Any) -> StepResult:
    """A StepResult from a dict, a StepResult-like object or an Observation carrying reward/done."""
    if isinstance(result, StepResult):
        return result
    if isinstance(result, dict):
        return StepResult(
            observation=result.get("observation"),
            reward=float(result.get("reward") or 0.0),
            done=bool(result.get("done")),
            info=dict(result.get("info") or {}),
        )
    if hasattr(result, "observation"):
        return StepResult(
            observation=result.observation,
            reward=float(getattr(result, "reward", 0.0) or 0.0),
            done=bool(getattr(result, "done", False)),
        )
    # An OpenEnv Observation holds reward/done itself; keep them out of the text the model sees.
    dump = (
        result.model_dump(exclude={"reward", "done", "metadata"})
        if hasattr(result, "model_dump")
        else result
    )
    return StepResult(
        observation=dump,
        reward=float(getattr(result, "reward", 0.0) or 0.0),
        done=bool(getattr(result, "done", False)),
        info=dict(getattr(result, "metadata", {}) or {}),
    )


class LocalBackend:
    """Runs a seed Env directly, or an OpenEnv server-side env with an action class."""

    def __init__(
        self, env_cls: str | type, env_kwargs: dict[str, Any], action_cls: type | None
    ) -> None:
        self.env = load_class(env_cls)(**env_kwargs)
        self.action_cls = action_cls

    def reset(self, trajectory: Any, seed: int | None) -> StepResult:
        """Reset the wrapped env."""
        if isinstance(self.env, Env):
            return self.env.reset(trajectory, seed=seed)
        return normalise_result(self.env.reset(seed=seed) if seed is not None else self.env.reset())

    def step(self, tool_name: str, action: dict[str, Any]) -> StepResult:
        """Step the wrapped env with a mapped action."""
        if isinstance(self.env, Env):
            return self.env.step(
                str(action.get("tool_name", tool_name)), dict(action.get("arguments", action))
            )
        act: Any = self.action_cls(**action) if self.action_cls else action
        return normalise_result(self.env.step(act))

    def close(self) -> None:
        """Close the wrapped env if it can be closed."""
        closer = getattr(self.env, "close", None)
        if callable(closer):
            closer()

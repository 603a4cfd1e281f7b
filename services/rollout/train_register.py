"""``TrainRegistry``: (rollout method, train method) pairs keyed by ``(train_engine, cluster_mode)``.

Built in, as the reference lists them: ``("verl", "hybrid")`` and
``("verl", "one_step_off")``, whose rollout methods are
``services.rollout.train_modes.hybrid_rollout`` / ``one_step_off_rollout`` and
whose train method is ``verl_train_step``: the batch built by
``VerlDataManager`` handed to a verl actor's ``update_policy`` (any object with
that method works; verl itself is needed only for a ``DataProto``). A run:

    rollout_method, train_method = registry.get_method("verl", "one_step_off")
    report = await rollout_method(batches, rollout=sample, train=partial(train_method, actor=actor),
                                  sync_weights=publish, max_staleness_steps=1)

``registry`` is the global instance.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from services.rollout.data_registry import VerlDataManager
from services.rollout.train_modes import hybrid_rollout, one_step_off_rollout
from shared.errors import InvalidInput
from shared.schema import Trajectory

__all__ = ["TrainRegistry", "registry", "verl_train_step"]


class TrainRegistry:
    """Rollout and train methods by ``(train_engine, cluster_mode)``."""

    def __init__(self) -> None:
        self._methods: dict[tuple[str, str], tuple[Callable[..., Any] | None, Callable[..., Any]]] = {}

    def register(self, train_engine: str, cluster_mode: str, rollout_method: Callable[..., Any] | None,
                 train_method: Callable[..., Any]) -> None:
        """Add or replace the methods for ``(train_engine, cluster_mode)``."""
        if not callable(train_method) or (rollout_method is not None and not callable(rollout_method)):
            raise InvalidInput("rollout_method (or None) and train_method must be callables", param="train_method")
        self._methods[(train_engine, cluster_mode)] = (rollout_method, train_method)

    def get_method(self, train_engine: str, cluster_mode: str
                   ) -> tuple[Callable[..., Any] | None, Callable[..., Any]] | None:
        """``(rollout_method, train_method)``, or ``None`` when nothing is registered."""
        return self._methods.get((train_engine, cluster_mode))

    def keys(self) -> list[tuple[str, str]]:
        """Registered keys, sorted."""
        return sorted(self._methods)


async def verl_train_step(trajectories: Sequence[Trajectory], step: int, *, actor: Any,
                          data_manager: VerlDataManager | None = None) -> Any:
    """One verl update: the trajectories as verl's batch, passed to ``actor.update_policy``."""
    update = getattr(actor, "update_policy", None)
    if not callable(update):
        raise InvalidInput(f"{type(actor).__name__} has no update_policy(batch): pass a verl actor", param="actor")
    if not trajectories:
        return {"step": step, "skipped": "empty batch"}
    batch = (data_manager or VerlDataManager())(trajectories)
    result = update(batch)
    return await result if inspect.isawaitable(result) else result


registry = TrainRegistry()
registry.register("verl", "hybrid", hybrid_rollout, verl_train_step)
registry.register("verl", "one_step_off", one_step_off_rollout, verl_train_step)

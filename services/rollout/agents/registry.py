"""Name registries: agents (``AGENTS_MAPPING``), train modes and data managers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from services.rollout.agents.base import BaseAgent
from services.rollout.agents.chat_agent import ChatAgent
from shared.errors import InvalidInput, NotFound
from shared.jsonl import iter_jsonl_path
from shared.schema import AgentTask

__all__ = [
    "AGENTS_MAPPING",
    "DataManagerRegistry",
    "JsonlTasks",
    "ListTasks",
    "Registry",
    "TrainMode",
    "TrainRegistry",
    "get_agent_by_name",
]

T = TypeVar("T")

AGENTS_MAPPING: dict[str, type[BaseAgent]] = {"chat": ChatAgent}


def get_agent_by_name(name: str) -> type[BaseAgent]:
    """The agent class registered under ``name``."""
    try:
        return AGENTS_MAPPING[name]
    except KeyError:
        known = ", ".join(sorted(AGENTS_MAPPING)) or "(none)"
        raise NotFound(f"unknown agent {name!r}; known agents: {known}", param="agent") from None


class Registry(Generic[T]):
    """A named registry with a decorator to add entries; duplicates are refused."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T | None = None) -> Any:
        """Add ``item`` under ``name`` (or use as ``@registry.register("name")``)."""
        if item is None:
            return lambda obj: self.register(name, obj)
        if name in self._items:
            raise InvalidInput(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        """The entry registered under ``name``."""
        if name not in self._items:
            raise NotFound(f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or '(none)'}")
        return self._items[name]

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)


class TrainMode(BaseModel):
    """How rollouts relate to training steps: how stale a policy may be when it samples."""

    name: str
    max_staleness_steps: int
    colocated: bool
    description: str


TrainRegistry: Registry[TrainMode] = Registry("train mode")
TrainRegistry.register("hybrid", TrainMode(name="hybrid", max_staleness_steps=0, colocated=True,
                                           description="rollout and training share devices, in turn"))
TrainRegistry.register("one_step_off", TrainMode(
    name="one_step_off", max_staleness_steps=1, colocated=False,
    description="rollouts for step k+1 run while step k trains"))
TrainRegistry.register("fully_async", TrainMode(
    name="fully_async", max_staleness_steps=4, colocated=False,
    description="streamed groups, bounded staleness"))


class ListTasks:
    """Tasks from an in-memory list of dicts."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def __iter__(self) -> Iterator[AgentTask]:
        return (AgentTask.model_validate(r) for r in self.rows)


class JsonlTasks:
    """Tasks from a JSONL file; bad lines are skipped and counted in ``errors``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.errors: list[tuple[int, str]] = []

    def __iter__(self) -> Iterator[AgentTask]:
        for rec in iter_jsonl_path(self.path):
            if rec.error is not None:
                self.errors.append((rec.line_no, rec.error))
                continue
            yield AgentTask.model_validate(rec.value)


DataManagerRegistry: Registry[Callable[..., Any]] = Registry("data manager")
DataManagerRegistry.register("list", ListTasks)
DataManagerRegistry.register("jsonl", JsonlTasks)

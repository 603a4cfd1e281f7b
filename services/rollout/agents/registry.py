"""Name registries: agents (``AGENTS_MAPPING``), a generic named registry, task sources.

``AGENTS_MAPPING`` is the reference's list of agent configurations: each entry
names an agent (``name``, referenced by ``agent_name`` in a task or a config)
and holds ``agent_class`` and ``agent_args``, ``env_class`` and ``env_args``,
and ``compute_trajectory_reward_fn`` (called on each finished trajectory).
``get_agent_by_name`` returns the entry or ``None``; ``agent_config`` raises a
``NotFound`` naming the known agents. The train and data-manager registries are
in ``services.rollout.train_register`` and ``services.rollout.data_registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from services.rollout.agents.base import BaseAgent, BaseEnv
from services.rollout.agents.chat_agent import ChatAgent
from shared.errors import InvalidInput, NotFound
from shared.jsonl import iter_jsonl_path
from shared.schema import AgentTask

__all__ = [
    "AGENTS_MAPPING",
    "JsonlTasks",
    "ListTasks",
    "Registry",
    "agent_config",
    "get_agent_by_name",
    "register_agent",
]

T = TypeVar("T")

AGENTS_MAPPING: list[dict[str, Any]] = [
    {"name": "chat", "agent_class": ChatAgent, "agent_args": {}, "env_class": None, "env_args": {},
     "compute_trajectory_reward_fn": None},
]


def get_agent_by_name(name: str) -> dict[str, Any] | None:
    """The ``AGENTS_MAPPING`` entry called ``name``, or ``None``."""
    for agent_config_ in AGENTS_MAPPING:
        if name == agent_config_.get("name", ""):
            return agent_config_
    return None


def agent_config(name: str) -> dict[str, Any]:
    """The entry called ``name``; raises ``NotFound`` listing the known agents."""
    found = get_agent_by_name(name)
    if found is None:
        known = ", ".join(sorted(str(a.get("name")) for a in AGENTS_MAPPING)) or "(none)"
        raise NotFound(f"unknown agent {name!r}; known agents: {known}", param="agent_name")
    return found


def register_agent(name: str, *, agent_class: type[BaseAgent], env_class: type[BaseEnv] | None = None,
                   agent_args: dict[str, Any] | None = None, env_args: dict[str, Any] | None = None,
                   compute_trajectory_reward_fn: Callable[..., Any] | None = None) -> dict[str, Any]:
    """Append an entry to ``AGENTS_MAPPING`` (a name may be registered once)."""
    if get_agent_by_name(name) is not None:
        raise InvalidInput(f"agent {name!r} is already registered", param="name")
    entry = {"name": name, "agent_class": agent_class, "agent_args": dict(agent_args or {}),
             "env_class": env_class, "env_args": dict(env_args or {}),
             "compute_trajectory_reward_fn": compute_trajectory_reward_fn}
    AGENTS_MAPPING.append(entry)
    return entry


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

"""Named, versioned reward components and the decorator that registers them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from services.reward.errors import UnknownComponent
from shared.schema import Trajectory

__all__ = ["Component", "ComponentFn", "ComponentResult", "get_component", "list_components", "reward_component"]


class ComponentResult(BaseModel):
    """A component's score and named metrics for one trajectory."""

    score: float
    metrics: dict[str, float] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)


ComponentFn = Callable[..., ComponentResult]


@dataclass(frozen=True)
class Component:
    """A registered component: name, version and the pure scoring function."""

    name: str
    version: str
    fn: ComponentFn

    def __call__(self, traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
        """Score one trajectory against its ground truth."""
        return self.fn(traj, ground_truth, **params)


_REGISTRY: dict[str, Component] = {}


def reward_component(*, name: str, version: str) -> Callable[[ComponentFn], ComponentFn]:
    """Register ``fn(traj, ground_truth, **params) -> ComponentResult`` under a name and version."""

    def wrap(fn: ComponentFn) -> ComponentFn:
        """Record the function in the registry and return it unchanged."""
        _REGISTRY[name] = Component(name=name, version=version, fn=fn)
        return fn

    return wrap


def get_component(name: str) -> Component:
    """The component registered under ``name``."""
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownComponent(f"no reward component named {name!r}; known: {', '.join(sorted(_REGISTRY))}",
                               param="components") from None


def list_components() -> dict[str, str]:
    """Registered component names mapped to their versions."""
    _load_builtins()
    return {name: comp.version for name, comp in sorted(_REGISTRY.items())}


def _load_builtins() -> None:
    # Imported lazily: the built-in modules register themselves with this registry.
    import services.reward.components  # noqa: F401

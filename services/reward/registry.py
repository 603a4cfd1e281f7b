"""Named, versioned reward components and the decorator that registers them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.reward.errors import RewardSpecError, UnknownComponent
from shared.schema import Trajectory

__all__ = ["Component", "ComponentFn", "ComponentResult", "ParamsModel", "get_component", "list_components",
           "reward_component"]


class ComponentResult(BaseModel):
    """A component's score and named metrics for one trajectory."""

    score: float
    metrics: dict[str, float] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)


ComponentFn = Callable[..., ComponentResult]


class ParamsModel(BaseModel):
    """Base of a component's params: an unknown param is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Component:
    """A registered component: name, version and the pure scoring function."""

    name: str
    version: str
    fn: ComponentFn
    params: type[ParamsModel] = ParamsModel

    def check_params(self, params: dict[str, Any], *, where: str = "params") -> None:
        """Raise ``RewardSpecError`` naming the first unknown or ill-typed param."""
        try:
            self.params.model_validate(params)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            known = ", ".join(self.params.model_fields) or "none"
            if err["type"] == "extra_forbidden":
                message = f"unknown param {loc!r} for reward component {self.name!r} (known params: {known})"
            else:
                message = f"param {loc!r} of reward component {self.name!r}: {err['msg']}"
            raise RewardSpecError(message, param=f"{where}.{loc}") from None

    def __call__(self, traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
        """Score one trajectory against its ground truth."""
        return self.fn(traj, ground_truth, **params)


_REGISTRY: dict[str, Component] = {}


def reward_component(*, name: str, version: str,
                     params: type[ParamsModel] = ParamsModel) -> Callable[[ComponentFn], ComponentFn]:
    """Register ``fn(traj, ground_truth, **params) -> ComponentResult`` with the params it accepts."""

    def wrap(fn: ComponentFn) -> ComponentFn:
        """Record the function in the registry and return it unchanged."""
        _REGISTRY[name] = Component(name=name, version=version, fn=fn, params=params)
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

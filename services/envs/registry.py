"""Environments by name: register a factory once, build instances with kwargs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.envs.base import Env
from services.envs.errors import EnvNotFound

__all__ = ["EnvRegistry", "EnvSpec", "default_registry", "get_env", "list_envs", "register_env"]

EnvFactory = Callable[..., Env]


class EnvSpec(BaseModel):
    """A registered env: its name, factory and default constructor kwargs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    factory: Any
    kwargs: dict[str, Any] = Field(default_factory=dict)
    description: str = ""
    version: str = "1.0.0"


class EnvRegistry:
    """Name → env factory; ``get`` builds a fresh instance (defaults overlaid by kwargs)."""

    def __init__(self) -> None:
        self._specs: dict[str, EnvSpec] = {}

    def register(self, name: str, factory: EnvFactory, **kwargs: Any) -> EnvSpec:
        """Register (or replace) ``factory`` under ``name`` with default kwargs."""
        doc = getattr(factory, "description", "") or (factory.__doc__ or "").strip()
        spec = EnvSpec(name=name, factory=factory, kwargs=kwargs, description=doc.split("\n")[0])
        self._specs[name] = spec
        return spec

    def spec(self, name: str) -> EnvSpec:
        """The spec registered under ``name``; EnvNotFound if none."""
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(sorted(self._specs)) or "(none)"
            raise EnvNotFound(f"No environment named {name!r}. Registered: {known}.") from None

    def get(self, name: str, **kwargs: Any) -> Env:
        """Build a new env instance of ``name``."""
        spec = self.spec(name)
        env: Env = spec.factory(**{**spec.kwargs, **kwargs})
        return env

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs


default_registry = EnvRegistry()


def register_env(name: str, factory: EnvFactory, **kwargs: Any) -> EnvSpec:
    """Register an env in the process-wide registry."""
    return default_registry.register(name, factory, **kwargs)


def get_env(name: str, **kwargs: Any) -> Env:
    """Build an env from the process-wide registry."""
    return default_registry.get(name, **kwargs)


def list_envs() -> list[str]:
    """Names in the process-wide registry."""
    return default_registry.names()

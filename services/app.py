"""The all-in-one app: every service in one process (the embedded default)."""

from __future__ import annotations

from fastapi import FastAPI

from shared.settings import Settings
from shared.web import ServiceSpec, create_app

__all__ = ["SERVICE_NAMES", "all_specs", "all_task_modules", "create_all_in_one_app", "service_spec"]

SERVICE_NAMES: tuple[str, ...] = ("gateway", "inference", "cleaning", "tools", "envs", "rollout", "reward",
                                   "console")


def service_spec(name: str) -> ServiceSpec:
    """The ServiceSpec of one service, by name."""
    if name not in SERVICE_NAMES:
        raise ValueError(f"unknown service {name!r}; choose one of {', '.join(SERVICE_NAMES)}")
    import importlib

    return importlib.import_module(f"services.{name}.app").SERVICE  # type: ignore[no-any-return]


def all_specs() -> list[ServiceSpec]:
    """Every service's spec, in mount order."""
    return [service_spec(n) for n in SERVICE_NAMES]


def all_task_modules() -> list[str]:
    """Every service's task modules: what a worker for the whole deployment loads."""
    return [module for spec in all_specs() for module in spec.task_modules]


def create_all_in_one_app(settings: Settings | None = None) -> FastAPI:
    """Every service mounted in one app, sharing one database and dispatcher."""
    return create_app(all_specs(), settings=settings, title="trajforge")

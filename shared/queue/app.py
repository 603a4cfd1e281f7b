"""The one Celery app (Redis broker and result backend), configured from settings.

Tasks are acknowledged late and rejected when their worker dies, so a killed
worker's task is redelivered after the broker's visibility timeout; task
bodies are idempotent (see ``shared.queue.tasks``), so redelivery records each
effect once.
"""

from __future__ import annotations

import importlib.util

from celery import Celery

from shared.settings import Settings

__all__ = ["TASK_MODULES", "celery_app", "configure_celery", "load_task_modules"]

#: Service modules whose tasks every worker loads (those that exist are imported).
TASK_MODULES: tuple[str, ...] = (
    "services.cleaning.tasks",
    "services.rollout.tasks",
    "services.reward.tasks",
    "services.tools.tasks",
)

celery_app = Celery("trajforge", set_as_current=False)


def _existing(modules: tuple[str, ...]) -> list[str]:
    found = []
    for name in modules:
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except ModuleNotFoundError:
            continue
    return found


def load_task_modules(extra: tuple[str, ...] = ()) -> list[str]:
    """Import every service's task module that exists (registers its tasks); returns their names."""
    names = _existing(TASK_MODULES) + list(extra)
    for name in names:
        importlib.import_module(name)
    return names


def configure_celery(settings: Settings, *, extra_modules: tuple[str, ...] = ()) -> Celery:
    """Point the Celery app at the configured Redis and load every task module."""
    if not settings.redis_url:
        raise ValueError("TRAJFORGE_REDIS_URL is not set: the embedded default runs work in-process")
    celery_app.conf.update(
        broker_url=settings.redis_url,
        result_backend=settings.redis_url,
        task_default_queue=settings.queue_name,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_acks_on_failure_or_timeout=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_time_limit=settings.queue_task_time_limit_s,
        broker_transport_options={
            "visibility_timeout": settings.queue_visibility_timeout_s,
            # Sweep for tasks of dead workers often (default is ~100 s); each sweep is one cheap Redis scan.
            "unacked_restore_interval": min(10, settings.queue_visibility_timeout_s),
            "unacked_restore_throttle": 1,
        },
        result_backend_transport_options={"visibility_timeout": settings.queue_visibility_timeout_s},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        include=_existing(TASK_MODULES) + list(extra_modules),
    )
    return celery_app

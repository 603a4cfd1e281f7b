"""The one Celery app (Redis broker and result backend), configured from settings.

Tasks are acknowledged late and rejected when their worker dies, so a killed
worker's task is redelivered after the broker's visibility timeout; task
bodies are idempotent (see ``shared.queue.tasks``), so redelivery records each
effect once.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from celery import Celery

from shared.settings import Settings

__all__ = ["celery_app", "configure_celery", "load_task_modules"]

celery_app = Celery("trajforge", set_as_current=False)


def load_task_modules(modules: Sequence[str]) -> list[str]:
    """Import the given task modules (registers their tasks); returns their names.

    The composition (each service's ``ServiceSpec.task_modules``, the worker
    command) names the modules: ``shared`` knows no service.
    """
    names = list(dict.fromkeys(modules))
    for name in names:
        importlib.import_module(name)
    return names


def configure_celery(settings: Settings, *, task_modules: Sequence[str] | None = None) -> Celery:
    """Point the Celery app at the configured Redis; a worker also names the task modules it loads."""
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
    )
    if task_modules is not None:
        celery_app.conf.update(include=list(dict.fromkeys(task_modules)))
    return celery_app

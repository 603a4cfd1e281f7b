"""Work distribution: one Celery app, one task declaration, two dispatchers."""

from shared.queue.app import celery_app, configure_celery
from shared.queue.dispatch import (
    CeleryDispatcher,
    Dispatcher,
    InProcessDispatcher,
    enqueue_after_commit,
    make_dispatcher,
)
from shared.queue.tasks import REGISTRY, TaskContext, queue_task, run_task, task_key

__all__ = [
    "REGISTRY",
    "CeleryDispatcher",
    "Dispatcher",
    "InProcessDispatcher",
    "TaskContext",
    "celery_app",
    "configure_celery",
    "enqueue_after_commit",
    "make_dispatcher",
    "queue_task",
    "run_task",
    "task_key",
]

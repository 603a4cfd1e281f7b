"""Waiting for a rollout job's groups: the Redis group stream when there is one, else polling the job.

The stream (``trajforge:rollout:{job_id}:groups``, one entry per stored group, at least once) is the
wire contract of the rollout service; entries are deduped on ``group_id``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shared.client import Client
from shared.errors import ServiceUnavailable

__all__ = ["TERMINAL", "group_stream_key", "wait_for_groups", "wait_for_job"]

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})


def group_stream_key(job_id: str) -> str:
    """The Redis stream the rollout service publishes a job's stored groups to."""
    return f"trajforge:rollout:{job_id}:groups"


def wait_for_job(client: Client, job_id: str, *, poll_s: float = 1.0, timeout_s: float = 3600.0) -> dict[str, Any]:
    """Poll the job until it is terminal; its last read."""
    deadline = time.monotonic() + timeout_s
    while True:
        job: dict[str, Any] = client.rollout(job_id)
        if job.get("status") in TERMINAL:
            return job
        if time.monotonic() > deadline:
            raise ServiceUnavailable(f"rollout job {job_id} did not finish within {timeout_s:.0f} s")
        time.sleep(poll_s)


def wait_for_groups(redis: Any, client: Client, job_id: str, *, expected: int,
                    on_group: Callable[[str, str], None] | None = None, block_ms: int = 1000,
                    timeout_s: float = 3600.0) -> tuple[set[str], dict[str, Any] | None]:
    """Read the job's group stream until ``expected`` distinct groups arrived or the job ended.

    ``on_group(group_id, task_id)`` is called as each group lands. Returns the group ids and, when the
    job ended before every group arrived, its last read.
    """
    key, last, seen = group_stream_key(job_id), "0-0", set[str]()
    deadline = time.monotonic() + timeout_s
    while len(seen) < expected:
        answer = redis.xread({key: last}, block=block_ms, count=64)
        for _, entries in answer or []:
            for entry_id, fields in entries:
                last = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                group = _text(fields.get(b"group_id", fields.get("group_id")))
                if group and group not in seen:
                    seen.add(group)
                    if on_group is not None:
                        on_group(group, _text(fields.get(b"task_id", fields.get("task_id"))))
        if not answer:
            job: dict[str, Any] = client.rollout(job_id)
            if job.get("status") in TERMINAL and len(seen) < expected:
                return seen, job
        if time.monotonic() > deadline:
            raise ServiceUnavailable(f"rollout job {job_id}: {len(seen)} of {expected} groups in {timeout_s:.0f} s")
    return seen, None


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw or "")

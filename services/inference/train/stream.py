"""A rollout job's groups as they finish: the Redis group stream when there is one, else the job's events.

The stream (``trajforge:rollout:{job_id}:groups``, one entry per stored group, at least once) is the
wire contract of the rollout service; without Redis, ``GET /v1/rollouts/{id}/events`` sends one
``group`` event per stored group and an ``end`` event. Either way a group is announced only once it
is stored and scored, so its rows (rewards and advantages included) are in the job's export; entries
are deduped on ``group_id``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from shared.client import Client
from shared.errors import ServiceUnavailable

__all__ = ["TERMINAL", "GroupArrival", "group_stream_key", "in_background", "iter_groups", "iter_stream_groups",
           "wait_for_job"]

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GroupArrival:
    """One finished group of a job, and when the trainer saw it (``time.perf_counter()``)."""

    group_id: str
    task_id: str
    at: float


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


def iter_stream_groups(redis: Any, client: Client, job_id: str, *, expected: int, block_ms: int = 1000,
                       timeout_s: float = 3600.0) -> Iterator[GroupArrival]:
    """Groups from the job's Redis stream as they land, until ``expected`` arrived or the job ended."""
    key, last, seen = group_stream_key(job_id), "0-0", set[str]()
    deadline = time.monotonic() + timeout_s
    while len(seen) < expected:
        answer = redis.xread({key: last}, block=block_ms, count=64)
        for _, entries in answer or []:
            for entry_id, fields in entries:
                last = _text(entry_id)
                group = _text(fields.get(b"group_id", fields.get("group_id")))
                if group and group not in seen:
                    seen.add(group)
                    yield GroupArrival(group, _text(fields.get(b"task_id", fields.get("task_id"))),
                                       time.perf_counter())
        if not answer and client.rollout(job_id).get("status") in TERMINAL:
            return  # ended before every group was stored (failed or cancelled)
        if time.monotonic() > deadline:
            raise ServiceUnavailable(f"rollout job {job_id}: {len(seen)} of {expected} groups in {timeout_s:.0f} s")


def _event_groups(client: Client, job_id: str) -> Iterator[GroupArrival]:
    seen: set[str] = set()
    for event in client.iter_rollout_events(job_id):
        if event.event != "group" or not isinstance(event.data, dict):
            continue
        group = str(event.data.get("group_id") or "")
        if group and group not in seen:
            seen.add(group)
            yield GroupArrival(group, str(event.data.get("task_id") or ""), time.perf_counter())


def in_background(items: Iterator[T]) -> Iterator[T]:
    """``items`` read by a daemon thread: each is taken (and time-stamped) as it comes, not when asked for.

    The trainer asks for the next group only after a gradient step; read in the background, a group's
    arrival time is when the server announced it, so the overlap of steps and sampling is measurable.
    An error of the reader is raised to the consumer.
    """
    box: queue.Queue[tuple[str, Any]] = queue.Queue()

    def read() -> None:
        try:
            for item in items:
                box.put(("item", item))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            box.put(("error", exc))
        else:
            box.put(("end", None))

    threading.Thread(target=read, name="trajforge-train-groups", daemon=True).start()
    while True:
        kind, value = box.get()
        if kind == "error":
            raise value
        if kind == "end":
            return
        yield value


def iter_groups(client: Client, job: dict[str, Any], *, redis: Any = None) -> Iterator[GroupArrival]:
    """The job's groups as they finish (read in the background): its Redis stream when ``redis`` is
    given, else its event stream."""
    job_id, expected = str(job["id"]), int(job.get("total_groups") or 0)
    if redis is not None and expected:
        return in_background(iter_stream_groups(redis, client, job_id, expected=expected))
    return in_background(_event_groups(client, job_id))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw or "")

"""Running one shard of a rollout job: its open groups, concurrently, each stored all-or-nothing.

Each group finishes on its own and is written in one transaction: the group
is claimed (only if no earlier run stored it), its kept trajectories are
inserted keyed by (group, member, attempt), and the job's counters advanced under the job's
row lock. After that commit the reward service keeps the scores it computed for the group with
their provenance (``POST /v1/rewards/record``: only the reward service writes its tables), and
the group goes to the job's Redis stream at least once (``services.rollout.publish``). So a
shard killed mid-way and run again redoes only the groups it had not stored,
and two runs racing on one group store it once. A watcher polls the job's
``cancel_requested`` and cancels the in-flight groups, whose calls and tools
are cancelled with them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.rollout import repository as repo
from services.rollout.build import build_runtime, needs_services, reward_processors_of, reward_spec_of
from services.rollout.engine import GroupResult
from services.rollout.processor_run import open_function_groups, open_processor_groups
from services.rollout.publish import group_entry, mark_published, publish_entry, stream_key
from services.rollout.remote import ServiceLink, open_service_link
from services.rollout.schemas import RolloutRunSpec
from services.rollout.scoring import GroupScores, score_group, truth_of
from services.rollout.teacher import TeacherScorer
from shared.aio import wait_event
from shared.db.models import RolloutJobRow, TrajectoryGroupRow
from shared.errors import ServiceUnavailable, TrajforgeError, UpstreamError
from shared.schema import Trajectory
from shared.settings import Settings

__all__ = ["OpenGroup", "ShardRun", "settle_job", "stream_key"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_FAILED_STOPS = frozenset({"api_error", "tool_error", "timeout", "cancelled"})


class GroupRunner(Protocol):
    """What runs one group: the built-in engine or a user processor."""

    @property
    def mode(self) -> str:
        """``tokens`` or ``messages``: what the stored trajectories carry."""
        ...

    async def run_group(self, prompt: Trajectory, group_size: int) -> GroupResult:
        """Run ``group_size`` members of one prompt."""
        ...


@dataclass(frozen=True)
class OpenGroup:
    """A group still to run, detached from its session."""

    id: uuid.UUID
    task_id: str
    task: dict[str, Any]

    @classmethod
    def of(cls, row: TrajectoryGroupRow) -> OpenGroup:
        """Copy the fields a run needs out of the row."""
        return cls(id=row.id, task_id=row.task_id, task=dict(row.task))


async def settle_job(session: AsyncSession, job: RolloutJobRow) -> None:
    """Give the job its final status once no group is open (the job row must be locked)."""
    if job.status in ("succeeded", "failed", "cancelled"):
        return
    if await repo.count_open_groups(session, job.id):
        return
    if job.cancel_requested:
        job.status = "cancelled"
    elif await repo.list_groups(session, job.id, status="failed"):
        job.status = "failed"
    else:
        job.status = "succeeded"
    await session.flush()


def _prompt(group: OpenGroup) -> Trajectory:
    task = group.task
    meta = {**(task.get("metadata") or {}), "task_id": group.task_id}
    if task.get("ground_truth") is not None:
        meta["ground_truth"] = task["ground_truth"]
    return Trajectory.model_validate({"id": group.task_id, "messages": task["messages"],
                                      "tools": task.get("tools") or [], "metadata": meta})


def _counts(old: dict[str, Any], trajs: list[Trajectory]) -> dict[str, int]:
    counts = {k: int(v) for k, v in (old or {}).items()}
    for t in trajs:
        key = f"stop_reason:{t.stop_reason}"
        counts[key] = counts.get(key, 0) + 1
        counts["trajectories"] = counts.get("trajectories", 0) + 1
        counts["failed"] = counts.get("failed", 0) + int(t.stop_reason in _FAILED_STOPS)
        if t.metadata.get("reward_status") == "pending":  # stored unscored: a re-score fills it
            counts["unscored"] = counts.get("unscored", 0) + 1
    counts.setdefault("failed", 0)
    return counts


def _summary(result: GroupResult, scores: GroupScores, mode: str) -> dict[str, Any]:
    return {"cut": [c.model_dump(mode="json") for c in result.cut], "rewards": scores.rewards,
            "advantages": scores.advantages, "mode": mode,
            "stop_reasons": [t.stop_reason for t in result.trajectories]}


class ShardRun:
    """One run of one shard: every open group concurrently, a cancellation watcher beside them."""

    def __init__(self, maker: async_sessionmaker[AsyncSession], settings: Settings, job_id: uuid.UUID,
                 spec: RolloutRunSpec, *, redis: Any = None) -> None:
        self.maker, self.settings, self.job_id, self.spec, self.redis = maker, settings, job_id, spec, redis
        self.reward_spec = reward_spec_of(spec)
        # One connection may serve every session here (tests, SQLite): keep DB work one at a time.
        self._db = asyncio.Lock()
        self.stored = 0
        self.cancelled = False
        #: Clients of the services this shard calls (tools, envs, reward), while it runs.
        self.link: ServiceLink | None = None

    async def _db_call(self, fn: Callable[[AsyncSession], Awaitable[_T]]) -> _T:
        async with self._db, self.maker() as session:
            out = await fn(session)
            await session.commit()
            return out

    async def run(self, groups: list[OpenGroup]) -> dict[str, Any]:
        """Run the groups; returns what happened (stored, cancelled, failed)."""
        if needs_services(self.spec):
            async with open_service_link(self.settings, self.maker, key_name=f"rollout-shard-{self.job_id}",
                                         db_lock=self._db) as link:
                self.link = link
                try:
                    outcomes = await self._run_with(groups)
                finally:
                    self.link = None
        else:
            outcomes = await self._run_with(groups)
        await self._close_unstored(groups, outcomes)
        return {"stored": self.stored, "cancelled": self.cancelled, "groups": len(groups)}

    async def _run_with(self, groups: list[OpenGroup]) -> list[Any]:
        if self.spec.processor is not None:
            async with open_processor_groups(
                    self.spec.processor, self.settings, self.maker, job_id=self.job_id,
                    model=self.spec.policy.model, key_name=f"rollout-shard-{self.job_id}",
                    sampling=self.spec.sampling, limits=self.spec.limits) as runner:
                return await self._run_all(runner, groups)
        if self.spec.function is not None:
            assert self.link is not None  # needs_services: the shard opened its service link
            async with open_function_groups(
                    self.spec.function, self.settings, self.maker, self.link, job_id=self.job_id,
                    model=self.spec.policy.model, key_name=f"rollout-shard-{self.job_id}",
                    sampling=self.spec.sampling, limits=self.spec.limits) as runner:
                return await self._run_all(runner, groups)
        return await self._run_engine(groups, self.link)

    async def _run_engine(self, groups: list[OpenGroup], link: ServiceLink | None) -> list[Any]:
        runtime = await build_runtime(self.spec, self.settings, link, job_id=self.job_id)
        try:
            assert runtime.engine is not None
            return await self._run_all(runtime.engine, groups)
        finally:
            await runtime.aclose()

    async def _run_all(self, runner: GroupRunner, groups: list[OpenGroup]) -> list[Any]:
        tasks = {asyncio.create_task(self._one(runner, g)): g for g in groups}
        stop = asyncio.Event()
        watcher = asyncio.create_task(self._watch(list(tasks), stop))
        try:
            return await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            # Stopped, never cancelled: a cancel landing inside its database call would leave a
            # shared connection (tests, SQLite) in a broken transaction.
            stop.set()
            await watcher

    async def _one(self, engine: GroupRunner, group: OpenGroup) -> bool:
        result = await engine.run_group(_prompt(group), self.spec.group_size)
        for traj in result.trajectories:
            traj.group_id = str(group.id)
        await self._teach(result.trajectories)
        scores = await self._score(result.trajectories, group.task.get("ground_truth"))
        stored = await self._db_call(lambda s: self._store(s, group, result, scores, engine.mode))
        if stored:
            self.stored += 1
            await self._record(group, result, scores)
            await self._publish(group, result)
        return stored

    async def _teach(self, trajs: list[Trajectory]) -> None:
        """The job's teacher scores every member's sampled tokens (``services.rollout.teacher``)."""
        if self.spec.teacher is None or self.link is None:
            return
        gateway = await self.link.gateway()
        await TeacherScorer(self.spec.teacher, gateway, guard=self.link.guard).score_all(trajs)

    async def _score(self, trajs: list[Trajectory], ground_truth: Any) -> GroupScores:
        """Rewards from the reward service (REST); when it cannot answer, the members stay unscored.

        Unscored members carry ``reward_status: pending`` and get no reward rows; re-scoring the job
        (``POST /v1/rollouts/{job_id}/rescore``) fills them later without re-running the rollouts.
        """
        if self.reward_spec is None or self.link is None:
            return score_group(trajs, estimator=self.spec.advantage_estimator)
        truth = truth_of(ground_truth)
        try:
            client = await self.link.reward()
            async with self.link.guard(client):
                results = await client.score(trajs, self.reward_spec.model_dump(mode="json"),
                                             ground_truths=[truth] * len(trajs),
                                             processors=reward_processors_of(self.spec) or None)
        except (UpstreamError, ServiceUnavailable) as exc:
            _log.warning("reward service unavailable for job %s: %s; trajectories stay unscored",
                         self.job_id, exc)
            for traj in trajs:
                traj.metadata.update(reward_status="pending", reward_error=exc.message)
            return score_group(trajs, has_spec=True, pending=True, estimator=self.spec.advantage_estimator)
        scored = list(results)
        for traj in trajs:
            traj.metadata["reward_status"] = "scored"
        return score_group(trajs, has_spec=True, scored=scored, estimator=self.spec.advantage_estimator)

    async def _store(self, session: AsyncSession, group: OpenGroup, result: GroupResult, scores: GroupScores,
                     mode: str) -> bool:
        job = await repo.lock_job(session, self.job_id)
        if not await repo.claim_group(session, group.id, _summary(result, scores, mode)):
            return False  # stored by an earlier run, or cancelled meanwhile
        totals = [s.score if s is not None else None for s in scores.scored]
        rows = repo.trajectory_rows(self.job_id, group.id, group.task_id, result.trajectories, attempt=0,
                                    totals=totals)
        if await repo.write_trajectories(session, rows):  # rows already there were counted when written
            job.counts = _counts(job.counts, result.trajectories)
        job.done_groups = await repo.count_groups(session, self.job_id, status="done")
        await settle_job(session, job)
        return True

    async def _record(self, group: OpenGroup, result: GroupResult, scores: GroupScores) -> None:
        """Have the reward service keep the group's scores; if it cannot, the members become pending.

        The scores stay on the stored trajectories; only their provenance rows are missing, which a
        re-score of the job writes later (``reward_status: pending`` says so).
        """
        if self.reward_spec is None or self.link is None:
            return
        results = [s.model_copy(update={"trajectory_id": str(repo.trajectory_id(group.id, t.sample_index, 0))})
                   for t, s in zip(result.trajectories, scores.scored, strict=True) if s is not None]
        if not results:
            return
        try:
            client = await self.link.reward()
            async with self.link.guard(client):
                await client.record(self.reward_spec.model_dump(mode="json"), results, job_id=str(self.job_id))
        except (UpstreamError, ServiceUnavailable) as exc:
            _log.warning("reward service could not keep the scores of group %s of job %s: %s; they stay pending",
                         group.task_id, self.job_id, exc)
            ids, error = [uuid.UUID(r.trajectory_id) for r in results], exc.message
            await self._db_call(lambda s: self._mark_pending(s, ids, error))

    async def _mark_pending(self, session: AsyncSession, ids: list[uuid.UUID], error: str) -> None:
        job = await repo.lock_job(session, self.job_id)
        marked = await repo.mark_reward_pending(session, ids, error)
        counts = dict(job.counts or {})
        counts["unscored"] = int(counts.get("unscored", 0)) + marked
        job.counts = counts

    async def _publish(self, group: OpenGroup, result: GroupResult) -> None:
        """Send the stored group's entry, then record it (a crash in between: the next run sends it)."""
        if self.redis is None:
            return
        ids = [repo.trajectory_id(group.id, t.sample_index, 0) for t in result.trajectories]
        if await publish_entry(self.redis, self.job_id, group_entry(group.id, group.task_id, ids)):
            await self._db_call(lambda s: mark_published(s, [group.id]))

    async def _watch(self, tasks: list[asyncio.Task[bool]], stop: asyncio.Event) -> None:
        while not stop.is_set():
            if await wait_event(stop, self.settings.rollout_poll_s):
                return
            job = await self._db_call(lambda s: repo.get_job(s, self.job_id))
            if job.cancel_requested:
                self.cancelled = True
                for task in tasks:
                    task.cancel()
                return

    async def _close_unstored(self, groups: list[OpenGroup], outcomes: list[Any]) -> None:
        failed = [(g, o) for g, o in zip(groups, outcomes, strict=True)
                  if isinstance(o, BaseException) and not isinstance(o, asyncio.CancelledError)]
        cancelled = [g.id for g, o in zip(groups, outcomes, strict=True) if isinstance(o, asyncio.CancelledError)]
        for group, exc in failed:
            _log.error("group %s of job %s failed: %r", group.task_id, self.job_id, exc)
        if failed or cancelled:
            await self._db_call(lambda s: self._mark(s, failed, cancelled))

    async def _mark(self, session: AsyncSession, failed: list[tuple[OpenGroup, BaseException]],
                    cancelled: list[uuid.UUID]) -> None:
        job = await repo.lock_job(session, self.job_id)
        await repo.mark_groups(session, cancelled, "cancelled")
        for group, exc in failed:
            message = exc.message if isinstance(exc, TrajforgeError) else f"{type(exc).__name__}: {exc}"
            await repo.fail_group(session, group.id, message)
        await settle_job(session, job)

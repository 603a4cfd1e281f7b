"""Rollout jobs: create (store + enqueue shards after commit), run a shard, cancel, read.

Request-side functions take the request's session and only flush; the task
side (``run_shard``) opens its own short sessions, one transaction per group
(see ``services.rollout.shard``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.rollout import repository as repo
from services.rollout.build import check_spec, reward_spec_of
from services.rollout.publish import publish_unpublished
from services.rollout.remote import ToolsServiceExecutor
from services.rollout.schemas import (
    RewardsKept,
    RewardTotals,
    RolloutJobCreate,
    RolloutJobRead,
    RolloutRunSpec,
    TrajectoryPage,
)
from services.rollout.shard import OpenGroup, ShardRun, settle_job
from shared.clients import Endpoints, EnvsClient, FunctionsClient, GatewayClient, RewardClient, ToolsClient
from shared.db.models import RolloutJobRow, TrajectoryRow
from shared.errors import InvalidInput, NotFound, TrajforgeError, ValidationFailed
from shared.queue import Dispatcher, enqueue_after_commit
from shared.schema.functions import RolloutFunctionComponent
from shared.schema.reward_spec import RewardSpec
from shared.settings import Settings
from shared.web import AppState

__all__ = [
    "RUN_SHARD_TASK",
    "cancel_job",
    "check_services",
    "check_teacher",
    "create_job",
    "fail_shard",
    "job_events",
    "keep_rewards",
    "read_job",
    "read_trajectories",
    "run_shard",
    "stream_trajectories",
]

RUN_SHARD_TASK = "rollout.run_shard"
_TERMINAL = ("succeeded", "failed", "cancelled")


def job_read(job: RolloutJobRow) -> RolloutJobRead:
    """The public view of a job row."""
    progress = job.done_groups / job.total_groups if job.total_groups else 1.0
    return RolloutJobRead(id=str(job.id), status=job.status, total_groups=job.total_groups,  # type: ignore[arg-type]
                          done_groups=job.done_groups, counts=dict(job.counts or {}), progress=progress,
                          cancel_requested=job.cancel_requested, error=job.error, created_at=job.created_at)


async def check_teacher(state: AppState, model: str, *, api_key: str | None, param: str = "teacher.model",
                        role: str = "teacher") -> None:
    """Refuse a model (the teacher, or the student) the gateway does not serve: 422 naming ``param``."""
    async with Endpoints(state.settings, engine=state.engine, sessionmaker=state.sessionmaker) as endpoints:
        gateway = await GatewayClient.open(endpoints, api_key=api_key)
        try:
            served = await gateway.models()
        finally:
            await gateway.aclose()
    if model not in served:
        raise ValidationFailed(f"the gateway does not serve the {role} {model!r}; it serves: "
                               f"{', '.join(served) or 'no model'}", param=param)


async def check_services(spec: RolloutRunSpec, state: AppState, *, api_key: str | None) -> None:
    """Refuse tools the tools service does not offer, envs the envs service does not host, a function
    component its package lacks, and a teacher the gateway does not serve (422s naming them), asking the
    services themselves."""
    if spec.teacher is not None:
        await check_teacher(state, spec.teacher.model, api_key=api_key)
    env_name = spec.env.name if spec.env is not None else None
    reward = _reward_spec(spec)
    if not spec.tools and env_name is None and spec.function is None and reward is None:
        return
    async with Endpoints(state.settings, engine=state.engine, sessionmaker=state.sessionmaker) as endpoints:
        if reward is not None:
            async with await RewardClient.open(endpoints, api_key=api_key) as rewards:
                await _check_reward(rewards, reward)
        if spec.tools:
            async with await ToolsClient.open(endpoints, api_key=api_key) as tools:
                await ToolsServiceExecutor.discover(tools, list(spec.tools), timeout_s=None)
        if env_name is not None:
            async with await EnvsClient.open(endpoints, api_key=api_key) as envs:
                try:
                    await envs.health(env_name)
                except NotFound:
                    raise ValidationFailed(f"unknown env {env_name!r}: the envs service hosts no env by that name",
                                           param="env.name") from None
        if spec.function is not None:
            async with await FunctionsClient.open(endpoints, api_key=api_key) as functions:
                await _check_function(functions, spec.function)


def _reward_spec(spec: RolloutRunSpec) -> RewardSpec | None:
    """The job's reward spec to ask the reward service about; one that does not parse is ``check_spec``'s 422."""
    try:
        return reward_spec_of(spec)
    except (TrajforgeError, ValueError):
        return None


async def _check_reward(rewards: RewardClient, reward: RewardSpec) -> None:
    """The reward service has every component the job's spec names, with the params it gives them."""
    try:
        await rewards.check_spec(reward.model_dump(mode="json"))
    except (InvalidInput, ValidationFailed) as exc:
        raise ValidationFailed(f"invalid reward spec: {exc.message}", param="reward") from None


async def _check_function(functions: FunctionsClient, component: RolloutFunctionComponent) -> None:
    """The package exists and did not fail to build; once built, it has the component's class."""
    package = await functions.get(str(component.fcmodel.package_id))
    if package.status == "failed":
        raise ValidationFailed(f"function.fcmodel.package_id: package {package.package_id} failed to build: "
                               f"{package.error}", param="function.fcmodel.package_id")
    classpath = component.fcmodel.classpath.replace(":", ".")
    if package.status == "ready" and classpath not in package.classpaths:
        raise ValidationFailed(f"function.fcmodel.classpath: package {package.package_id} has no processor "
                               f"{classpath!r} (found: {', '.join(package.classpaths) or 'none'})",
                               param="function.fcmodel.classpath")


async def create_job(session: AsyncSession, dispatcher: Dispatcher, body: RolloutJobCreate,
                     *, processor_modules: Sequence[str] = (), reward_modules: Sequence[str] = ()) -> RolloutJobRead:
    """Store the job and its groups; one shard task per ``shard_size`` groups, sent after commit."""
    check_spec(body, processor_modules=processor_modules, reward_modules=reward_modules)
    tasks = [t.model_dump(mode="json", exclude_none=True) for t in body.tasks]
    job = await repo.add_job(session, body.run_spec().model_dump(mode="json"), tasks,
                             shard_size=body.shard_size)
    shards = (len(tasks) + body.shard_size - 1) // body.shard_size
    for shard_index in range(shards):
        enqueue_after_commit(session, dispatcher, RUN_SHARD_TASK, job_id=str(job.id), shard_index=shard_index)
    return job_read(job)


async def read_job(session: AsyncSession, job_id: uuid.UUID) -> RolloutJobRead:
    """A job's status, progress and counts."""
    return job_read(await repo.get_job(session, job_id))


async def cancel_job(session: AsyncSession, job_id: uuid.UUID) -> RolloutJobRead:
    """Ask running shards to stop; groups no shard started are cancelled now."""
    job = await repo.lock_job(session, job_id)
    if job.status not in _TERMINAL:
        job.cancel_requested = True
        await repo.cancel_pending_groups(session, job_id)
        await settle_job(session, job)
    return job_read(job)


def _spec(job: RolloutJobRow) -> RolloutRunSpec:
    return RolloutRunSpec.model_validate(job.spec)


async def _start_shard(session: AsyncSession, job_id: uuid.UUID, shard_index: int
                       ) -> tuple[RolloutRunSpec, list[OpenGroup]]:
    job = await repo.lock_job(session, job_id)
    groups = await repo.open_groups(session, job_id, shard_index)
    if job.cancel_requested:
        await repo.mark_groups(session, [g.id for g in groups], "cancelled")
        await settle_job(session, job)
        return _spec(job), []
    await repo.mark_groups(session, [g.id for g in groups], "running")
    if job.status == "pending":
        job.status = "running"
    return _spec(job), [OpenGroup.of(g) for g in groups]


async def run_shard(maker: async_sessionmaker[AsyncSession], settings: Settings, job_id: uuid.UUID,
                    shard_index: int) -> dict[str, Any]:
    """Run the shard's groups not yet stored; safe to run again after a crash.

    Groups an earlier run stored but did not get onto the Redis stream go out first; groups whose
    publication failed during this run are tried once more at its end.
    """
    redis = _redis(settings)
    try:
        await publish_unpublished(maker, redis, job_id, shard_index)
        async with maker() as session:
            spec, groups = await _start_shard(session, job_id, shard_index)
            await session.commit()
        if not groups:
            return {"stored": 0, "groups": 0}
        outcome = await ShardRun(maker, settings, job_id, spec, redis=redis).run(groups)
        await publish_unpublished(maker, redis, job_id, shard_index)  # what Redis refused mid-run
        return outcome
    finally:
        if redis is not None:
            await redis.aclose()


def _redis(settings: Settings) -> Any:
    if not settings.redis_url:
        return None
    import redis.asyncio as aioredis

    return aioredis.from_url(settings.redis_url)


async def fail_shard(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID, shard_index: int,
                     error: str) -> None:
    """Record a shard that cannot run (no retry left): its open groups fail, the job settles."""
    async with maker() as session:
        job = await repo.lock_job(session, job_id)
        for group in await repo.open_groups(session, job_id, shard_index):
            await repo.fail_group(session, group.id, error)
        job.error = error
        await settle_job(session, job)
        await session.commit()


def _item(row: TrajectoryRow, reward: float | None) -> dict[str, Any]:
    data = repo.trajectory_from_row(row).to_row()
    if row.prompt_ids is not None:
        data["tokens"] = {"prompt_ids": row.prompt_ids, "response_ids": row.response_ids,
                          "loss_mask": row.loss_mask, "logprobs": row.logprobs,
                          "weight_version": row.weight_version}
        if row.teacher_logprobs is not None:
            data["tokens"]["teacher_logprobs"] = row.teacher_logprobs
    return {**data, "group_id": str(row.group_id), "task_id": row.task_id, "sample_index": row.sample_index,
            "attempt": row.attempt, "reward": reward if reward is not None else row.meta.get("reward")}


async def keep_rewards(session: AsyncSession, job_id: uuid.UUID, body: RewardTotals) -> RewardsKept:
    """Keep the reward service's newest totals on the job's trajectories (404 for an unknown job)."""
    await repo.get_job(session, job_id)
    kept = await repo.keep_rewards(session, job_id, {t.trajectory_id: t.score for t in body.totals})
    return RewardsKept(kept=kept)


async def read_trajectories(session: AsyncSession, job_id: uuid.UUID, *, offset: int, limit: int) -> TrajectoryPage:
    """A page of the job's stored trajectories."""
    await repo.get_job(session, job_id)
    rows = await repo.page_trajectories(session, job_id, offset=offset, limit=limit)
    items = [_item(row, reward) for row, reward in rows]
    return TrajectoryPage(items=items, next_offset=offset + len(items) if len(items) == limit else None,
                          total=await repo.count_trajectories(session, job_id))


async def stream_trajectories(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID, *,
                              page_size: int = 200) -> AsyncIterator[bytes]:
    """Every stored trajectory of the job as JSON lines, a page at a time."""
    offset = 0
    while True:
        async with maker() as session:
            page = await read_trajectories(session, job_id, offset=offset, limit=page_size)
        for item in page.items:
            yield orjson.dumps(item) + b"\n"
        if page.next_offset is None:
            return
        offset = page.next_offset


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


async def job_events(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID, *,
                     poll_s: float) -> AsyncIterator[bytes]:
    """Server-sent events from polling the job: progress, each stored group, then the end."""
    seen: set[uuid.UUID] = set()
    last: dict[str, Any] | None = None
    while True:
        async with maker() as session:
            job = await repo.get_job(session, job_id)
            groups = await repo.list_groups(session, job_id, status="done")
            status, progress = job.status, {"done_groups": job.done_groups, "total_groups": job.total_groups,
                                            "counts": dict(job.counts or {})}
        for group in groups:
            if group.id not in seen:
                seen.add(group.id)
                yield _sse("group", {"task_id": group.task_id, "group_id": str(group.id),
                                     "rewards": (group.summary or {}).get("rewards", [])})
        if progress != last:
            last = progress
            yield _sse("progress", progress)
        if status in _TERMINAL:
            yield _sse("end", {"status": status})
            return
        await asyncio.sleep(poll_s)

"""OPD jobs: on-policy distillation rounds over a training and a validation set.

``create_opd_job`` checks the whole request (components, datasets, the student
and the teacher against the gateway's models) and stores the job; one queue
task (``rollout.run_opd``) then runs its rounds in order. A round is two
ordinary rollout jobs, run by this task shard by shard (``service.run_shard``,
idempotent, so a redelivered task redoes only what was not stored):

- training: every training row ``group_size`` times with the student through
  the gateway, by the rollout component; each member scored by the reward
  components (by weight), scored token by token by the teacher when
  ``teacher_model`` is set, GRPO and distillation advantages exported per token;
- validation: every validation row ``validation_group_size`` times, scored the
  same way (no teacher).

A member whose processor raises or hangs is stored FAILED with its cause
(``ROLLOUT_ERROR:``) and the round goes on. Each round records its rollout job
ids, status and metrics (trajectories, failed, mean reward and per reward
component, teacher-scored tokens and their mean reverse KL). trajforge does not
train: a trainer takes a round's export (``GET /v1/rollouts/{train_job_id}/export``)
between rounds, and the next round samples whatever weights the student serves.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.rollout import repository as repo
from services.rollout import service
from services.rollout.build import check_spec
from services.rollout.errors import ProcessorLoadError
from services.rollout.opd_schemas import (
    OpdDataset,
    OpdJobCreate,
    OpdJobRead,
    OpdRewardFunction,
    OpdRolloutFunction,
    OpdRound,
)
from services.rollout.processors import ProcessorSpec
from services.rollout.remote import open_service_link
from services.rollout.schemas import PolicySpec, RolloutJobCreate, RolloutTask
from shared.db.locking import locked_row
from shared.db.models import OpdJobRow, TrajectoryGroupRow, TrajectoryRow
from shared.errors import NotFound, ServiceUnavailable, TrajforgeError, UpstreamError, ValidationFailed
from shared.queue import Dispatcher, enqueue_after_commit
from shared.schema import SamplingParams, TeacherSpec
from shared.schema.budgets import RolloutLimits
from shared.schema.functions import RewardFunctionComponent, RolloutFunctionComponent
from shared.settings import Settings
from shared.web import AppState

_log = logging.getLogger(__name__)

__all__ = ["RUN_OPD_TASK", "cancel_opd_job", "check_opd", "create_opd_job", "read_opd_job", "round_job", "run_opd"]

RUN_OPD_TASK = "rollout.run_opd"
_TERMINAL = ("succeeded", "failed", "cancelled")


def _task(row: dict[str, Any], index: int, where: str) -> RolloutTask:
    """One dataset row as a rollout task; 422 naming the row when it holds no prompt."""
    messages = row.get("messages")
    if not messages and isinstance(row.get("prompt"), str) and row["prompt"].strip():
        messages = [{"role": "user", "content": row["prompt"]}]
    raw_extra = row.get("rollout_extra")
    extra: dict[str, Any] = raw_extra if isinstance(raw_extra, dict) else {}
    truth = row.get("ground_truth", extra.get("solution"))
    try:
        task = RolloutTask.model_validate({"id": str(row.get("id") or f"row-{index}"), "messages": messages,
                                           "tools": row.get("tools"), "ground_truth": truth, "metadata": extra})
    except ValueError as exc:
        raise ValidationFailed(f"{where} has no usable prompt (messages with a user turn, or prompt): {exc}",
                               param=where) from None
    if not any(m.role == "user" for m in task.messages):
        raise ValidationFailed(f"{where} has no user turn", param=where)
    return task


def _tasks(datasets: Sequence[OpdDataset], field: str) -> list[RolloutTask]:
    tasks = [_task(row, i, f"{field}[{d}].rows[{i}]")
             for d, dataset in enumerate(datasets) for i, row in enumerate(dataset.rows)]
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):  # rows without ids are numbered per dataset: number them per job instead
        tasks = [t.model_copy(update={"id": f"{t.id}-{n}"}) for n, t in enumerate(tasks)]
    return tasks


def _components(body: OpdJobCreate) -> tuple[OpdRolloutFunction, list[OpdRewardFunction]]:
    names = [f.name for f in body.functions]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ValidationFailed(f"function component name {name!r} is used twice", param=f"functions[{i}].name")
    rollouts = [f for f in body.functions if isinstance(f, OpdRolloutFunction)]
    if len(rollouts) != 1:
        raise ValidationFailed(f"an OPD job takes exactly one rollout component, not {len(rollouts)}",
                               param="functions")
    rewards = [f for f in body.functions if isinstance(f, OpdRewardFunction)]
    if rewards and sum(f.weight for f in rewards) == 0:
        raise ValidationFailed("the reward components' weights sum to 0", param="functions")
    return rollouts[0], rewards


def _runner(comp: OpdRolloutFunction) -> dict[str, Any]:
    """The rollout job's runner: the uploaded component itself (``function``), or an in-process processor."""
    if comp.fcmodel.package_id is not None:
        return {"function": RolloutFunctionComponent.model_validate(comp.model_dump(exclude={"type"}))}
    return {"processor": _processor(comp)}


def _processor(comp: OpdRolloutFunction) -> ProcessorSpec:
    rt = comp.runtime
    # ``concurrency`` calls per instance; ``capacity`` instances now, up to ``max_capacity``.
    return ProcessorSpec(classpath=comp.fcmodel.classpath, timeout_s=comp.timeout,
                         concurrency=rt.concurrency * rt.capacity, capacity=rt.concurrency * rt.max_capacity)


def round_job(body: OpdJobCreate, index: int, *, validation: bool) -> RolloutJobCreate:
    """The rollout job of one round's training (or validation) set."""
    hp = body.hyper_parameters
    rollout, rewards = _components(body)
    teacher = None
    if body.teacher_model is not None and not validation:
        teacher = TeacherSpec(model=body.teacher_model, system_prompt=hp.teacher_system_prompt,
                              distill_weight=hp.distill_weight, reward_weight=hp.reward_weight)
    sampling = SamplingParams(temperature=hp.temperature, top_p=hp.top_p, max_tokens=hp.max_tokens,
                              seed=None if hp.seed is None else hp.seed + index)
    reward_functions = [RewardFunctionComponent.model_validate(r.model_dump(exclude={"type"})) for r in rewards]
    # The rollout component's ``timeout`` is the member's time budget; ``max_tokens`` its per-turn budget.
    limits = RolloutLimits(max_tokens_per_turn=hp.max_tokens, max_total_tokens=max(4096, hp.max_tokens),
                           timeout_s=rollout.timeout, tool_timeout_s=min(60.0, rollout.timeout))
    return RolloutJobCreate(
        tasks=_tasks(body.validation_datasets if validation else body.training_datasets,
                     "validation_datasets" if validation else "training_datasets"),
        group_size=hp.validation_group_size if validation else hp.group_size, policy=PolicySpec(model=body.model),
        sampling=sampling, limits=limits, **_runner(rollout), reward_functions=reward_functions or None,
        teacher=teacher)


def check_opd(body: OpdJobCreate, *, processor_modules: Sequence[str], reward_modules: Sequence[str]) -> None:
    """Every name, row and component of the request, checked before anything is stored (422s naming fields)."""
    _components(body)
    specs = [round_job(body, 0, validation=False)]
    if body.validation_datasets:
        specs.append(round_job(body, 0, validation=True))
    try:
        check_spec(specs[0], processor_modules=processor_modules, reward_modules=reward_modules)
    except (ProcessorLoadError, ValidationFailed) as exc:
        raise ValidationFailed(exc.message, param=_function_param(body, exc.param)) from None


def _function_param(body: OpdJobCreate, param: str | None) -> str:
    """A rollout spec's field name in the OPD request's terms (``functions[i]...``)."""
    if param and param.startswith("reward_functions["):
        k = int(param[len("reward_functions["):param.index("]")])
        rewards = [i for i, f in enumerate(body.functions) if isinstance(f, OpdRewardFunction)]
        return f"functions[{rewards[k]}]{param[param.index(']') + 1:]}"
    rollout = next(i for i, f in enumerate(body.functions) if isinstance(f, OpdRolloutFunction))
    if param and param.startswith("function."):
        return f"functions[{rollout}]{param[len('function'):]}"
    return f"functions[{rollout}].fcmodel.classpath"


def opd_read(row: OpdJobRow) -> OpdJobRead:
    """The public view of an OPD job row."""
    spec = OpdJobCreate.model_validate(row.spec)
    return OpdJobRead(id=str(row.id), job_name=row.name, status=row.status,  # type: ignore[arg-type]
                      model=spec.model, teacher_model=spec.teacher_model, rounds_total=spec.hyper_parameters.rounds,
                      rounds=[OpdRound.model_validate(r) for r in row.rounds or []],
                      hyper_parameters=spec.hyper_parameters.model_dump(mode="json"), resources=spec.resources,
                      functions=[f.model_dump(mode="json") for f in spec.functions], error=row.error,
                      created_at=row.created_at)


async def create_opd_job(session: AsyncSession, dispatcher: Dispatcher, body: OpdJobCreate, state: AppState, *,
                         api_key: str | None) -> OpdJobRead:
    """Check the request, store the job, and send its task after commit."""
    settings = state.settings
    check_opd(body, processor_modules=settings.rollout_processor_modules,
              reward_modules=settings.reward_processor_modules)
    await service.check_teacher(state, body.model, api_key=api_key, param="model", role="student")
    if body.teacher_model is not None:
        await service.check_teacher(state, body.teacher_model, api_key=api_key, param="teacher_model")
    spec = round_job(body, 0, validation=False)
    if spec.function is not None:  # the uploaded package exists, built, and holds the class
        try:
            await service.check_services(spec.model_copy(update={"teacher": None}), state, api_key=api_key)
        except ValidationFailed as exc:
            raise ValidationFailed(exc.message, param=_function_param(body, exc.param)) from None
    row = OpdJobRow(name=body.job_name, status="pending", spec=body.model_dump(mode="json", by_alias=False),
                    rounds=[], cancel_requested=False)
    session.add(row)
    await session.flush()
    enqueue_after_commit(session, dispatcher, RUN_OPD_TASK, job_id=str(row.id))
    return opd_read(row)


async def _get(session: AsyncSession, job_id: uuid.UUID, *, lock: bool = False) -> OpdJobRow:
    if lock:
        row = await locked_row(session, OpdJobRow, job_id)
    else:
        stmt = select(OpdJobRow).where(OpdJobRow.id == job_id).execution_options(populate_existing=True)
        row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise NotFound(f"no OPD job with id {job_id}", param="id")
    return row


async def read_opd_job(session: AsyncSession, job_id: uuid.UUID) -> OpdJobRead:
    """An OPD job's status and its rounds."""
    return opd_read(await _get(session, job_id))


async def cancel_opd_job(session: AsyncSession, job_id: uuid.UUID) -> OpdJobRead:
    """Stop after the running round: its rollout jobs are cancelled, no further round starts."""
    row = await _get(session, job_id, lock=True)
    if row.status not in _TERMINAL:
        row.cancel_requested = True
        for rnd in row.rounds or []:
            for key in ("train_job_id", "validation_job_id"):
                if rnd.get(key) and rnd.get("status") not in _TERMINAL:
                    await service.cancel_job(session, uuid.UUID(rnd[key]))
        if row.status == "pending":
            row.status = "cancelled"
    return opd_read(row)


# -- the task side ---------------------------------------------------------------------------------


async def _open_round(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID, index: int
                      ) -> dict[str, Any] | None:
    """The round's record, creating its rollout jobs the first time; None once the job is cancelled."""
    async with maker() as session:
        row = await _get(session, job_id, lock=True)
        if row.cancel_requested:
            row.status = "cancelled"
            await session.commit()
            return None
        rounds = list(row.rounds or [])
        if index < len(rounds):
            await session.commit()
            return dict(rounds[index])
        body = OpdJobCreate.model_validate(row.spec)
        record: dict[str, Any] = {"round": index, "status": "running", "metrics": {}}
        for key, validation in (("train_job_id", False), ("validation_job_id", True)):
            if validation and not body.validation_datasets:
                continue
            spec = round_job(body, index, validation=validation)
            tasks = [t.model_dump(mode="json", exclude_none=True) for t in spec.tasks]
            job = await repo.add_job(session, spec.run_spec().model_dump(mode="json"), tasks,
                                     shard_size=spec.shard_size)
            record[key] = str(job.id)
        row.rounds, row.status = [*rounds, record], "running"
        await session.commit()
        return record


async def _run_rollout(maker: async_sessionmaker[AsyncSession], settings: Settings, job_id: uuid.UUID) -> None:
    """Every shard of one rollout job, concurrently; a shard that cannot run fails its groups, not the task."""
    async with maker() as session:
        job = await repo.get_job(session, job_id)
        shards = sorted(set((await session.scalars(
            select(TrajectoryGroupRow.shard_index).where(TrajectoryGroupRow.job_id == job_id))).all()))
        done = job.status in _TERMINAL

    async def one(shard: int) -> None:
        try:
            await service.run_shard(maker, settings, job_id, shard)
        except Exception as exc:  # noqa: BLE001 - recorded on the job's groups, the round goes on
            await service.fail_shard(maker, job_id, shard, f"{type(exc).__name__}: {exc}")

    if not done:
        await asyncio.gather(*(one(s) for s in shards))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


async def job_metrics(session: AsyncSession, job_id: uuid.UUID, *,
                      components: dict[str, float] | None = None) -> dict[str, Any]:
    """One rollout job's figures: members, failures, rewards (total, and ``components``: the reward service's
    mean per component), teacher KL."""
    job = await repo.get_job(session, job_id)
    rows = (await session.scalars(select(TrajectoryRow).where(TrajectoryRow.job_id == job_id))).all()
    rewards = [float(r.meta["reward"]) for r in rows if isinstance((r.meta or {}).get("reward"), int | float)]
    teacher = [r.meta["teacher"] for r in rows if ((r.meta or {}).get("teacher") or {}).get("status") == "ok"]
    kl_tokens = sum(int(t["tokens"]) for t in teacher if t.get("reverse_kl") is not None)
    kl_sum = sum(float(t["reverse_kl"]) * int(t["tokens"]) for t in teacher if t.get("reverse_kl") is not None)
    return {"status": job.status, "trajectories": len(rows), "failed": sum(1 for r in rows if r.status == "failed"),
            "scored": len(rewards), "reward_mean": _mean(rewards),
            "reward_components": dict(sorted((components or {}).items())),
            "teacher_scored": len(teacher), "teacher_tokens": kl_tokens,
            "reverse_kl_mean": kl_sum / kl_tokens if kl_tokens else None, "error": job.error}


async def _component_means(maker: async_sessionmaker[AsyncSession], settings: Settings,
                           jobs: dict[str, uuid.UUID]) -> dict[str, dict[str, float]]:
    """Each job's mean score per reward component, from the reward service (empty when it cannot answer)."""
    try:
        async with open_service_link(settings, maker, key_name="opd-metrics") as link:
            client = await link.reward()
            async with link.guard(client):
                return {split: (await client.job_summary(str(job_id))).components for split, job_id in jobs.items()}
    except (UpstreamError, ServiceUnavailable) as exc:
        _log.warning("reward service could not sum up the round's components: %s; they stay empty", exc)
        return {}


async def _close_round(maker: async_sessionmaker[AsyncSession], settings: Settings, job_id: uuid.UUID,
                       record: dict[str, Any]) -> bool:
    """Store the round's metrics and status; True when it succeeded."""
    splits = (("train", "train_job_id"), ("validation", "validation_job_id"))
    jobs = {split: uuid.UUID(record[key]) for split, key in splits if record.get(key)}
    components = await _component_means(maker, settings, jobs)
    async with maker() as session:
        metrics = {split: await job_metrics(session, jid, components=components.get(split))
                   for split, jid in jobs.items()}
        statuses = {m["status"] for m in metrics.values()}
        status = "cancelled" if "cancelled" in statuses else "succeeded" if statuses == {"succeeded"} else "failed"
        errors = [f"{split}: {m['error']}" for split, m in metrics.items() if m["error"]]
        row = await _get(session, job_id, lock=True)
        rounds = list(row.rounds)
        rounds[record["round"]] = {**record, "status": status, "metrics": metrics,
                                   "error": "; ".join(errors) or None}
        row.rounds = rounds
        await session.commit()
        return status == "succeeded"


async def _finish(maker: async_sessionmaker[AsyncSession], job_id: uuid.UUID, error: str | None) -> None:
    async with maker() as session:
        row = await _get(session, job_id, lock=True)
        statuses = {r.get("status") for r in row.rounds or []}
        if row.cancel_requested or "cancelled" in statuses:
            row.status = "cancelled"
        elif error is not None or "failed" in statuses:
            row.status, row.error = "failed", error or "; ".join(
                f"round {r['round']}: {r.get('error') or 'failed'}" for r in row.rounds if r.get("status") == "failed")
        else:
            row.status = "succeeded"
        await session.commit()


async def run_opd(maker: async_sessionmaker[AsyncSession], settings: Settings, job_id: uuid.UUID) -> dict[str, Any]:
    """Run the job's rounds in order (the queue task's body); safe to run again after a crash."""
    async with maker() as session:
        row = await _get(session, job_id)
        if row.status in _TERMINAL:
            return {"status": row.status}
        rounds = OpdJobCreate.model_validate(row.spec).hyper_parameters.rounds
    error: str | None = None
    try:
        for index in range(rounds):
            record = await _open_round(maker, job_id, index)
            if record is None:
                break
            if record.get("status") in _TERMINAL:
                continue
            await asyncio.gather(*(_run_rollout(maker, settings, uuid.UUID(record[k]))
                                   for k in ("train_job_id", "validation_job_id") if record.get(k)))
            await _close_round(maker, settings, job_id, record)
    except TrajforgeError as exc:
        error = exc.message
    await _finish(maker, job_id, error)
    async with maker() as session:
        return {"status": (await _get(session, job_id)).status}

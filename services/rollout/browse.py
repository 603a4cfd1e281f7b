"""Read-only views of stored rollouts for people (the console) and scripts.

Listing jobs, a job's statistics (reward histogram, lengths, per-turn latency
percentiles, stop reasons, tokens/s, failures by cause), its groups with their
members side by side, one trajectory with its token data and every stored
reward with provenance, and a paginated search over trajectories. Every
function takes the request's session and only reads.

Totals (listing, sorting, filtering, means) are each trajectory's own ``reward``
column, the rollout's copy of the reward service's newest total; per-component
scores and their provenance are the reward service's, read through its client.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Float, Select, String, Text, cast, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from services.rollout import repository as repo
from services.rollout.schemas import JobStatus
from shared.clients import RewardClient
from shared.db.models import RolloutJobRow, TrajectoryGroupRow, TrajectoryRow
from shared.errors import NotFound, ValidationFailed
from shared.schema.reward_spec import TOTAL_COMPONENT, RewardProvenance, StoredReward

__all__ = [
    "GroupDetail",
    "GroupPage",
    "GroupSummary",
    "Histogram",
    "JobStats",
    "MemberSummary",
    "RewardProvenance",
    "RolloutJobPage",
    "RolloutJobSummary",
    "TrajectoryDetail",
    "TrajectoryHit",
    "TrajectoryQuery",
    "TrajectorySearchPage",
    "job_stats",
    "list_groups",
    "list_jobs",
    "read_group",
    "read_trajectory",
    "search_trajectories",
]

#: Trajectories a statistics request reads at most (newest first); the answer says when it sampled.
STATS_ROW_CAP = 20_000
_HIST_BINS = 20


class RolloutJobSummary(BaseModel):
    """One line of the jobs list: state, shape of the job, mean reward so far."""

    id: str
    status: JobStatus
    total_groups: int
    done_groups: int
    progress: float
    counts: dict[str, int] = Field(default_factory=dict)
    mode: str | None = None
    group_size: int | None = None
    backend: str = "local"
    model: str | None = None
    mean_reward: float | None = None
    error: str | None = None
    created_at: datetime
    updated_at: datetime


class RolloutJobPage(BaseModel):
    """A page of rollout jobs, newest first."""

    items: list[RolloutJobSummary]
    next_offset: int | None = None


class Histogram(BaseModel):
    """Counts of values in equal-width bins (``edges`` has one more entry than ``counts``)."""

    edges: list[float] = Field(default_factory=list)
    counts: list[int] = Field(default_factory=list)
    n: int = 0


class FailureCause(BaseModel):
    """Trajectories (or groups) that failed the same way, with a few examples."""

    code: str
    message: str
    count: int
    trajectory_ids: list[str] = Field(default_factory=list)
    group_ids: list[str] = Field(default_factory=list)


class JobStats(BaseModel):
    """What a job's stored trajectories add up to (read ``sampled`` when the job is huge)."""

    job_id: str
    status: JobStatus
    trajectories: int
    sampled: bool = False
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    reward_histogram: Histogram = Field(default_factory=Histogram)
    reward_mean: float | None = None
    #: Mean total reward of each done group, in the order the groups finished.
    group_rewards: list[float | None] = Field(default_factory=list)
    completion_tokens: Histogram = Field(default_factory=Histogram)
    turns: dict[str, int] = Field(default_factory=dict)
    #: Per-turn policy latency in seconds: p50, p90, p99, max.
    turn_latency_s: dict[str, float] = Field(default_factory=dict)
    total_completion_tokens: int = 0
    elapsed_s: float = 0.0
    tokens_per_s: float | None = None
    failures: list[FailureCause] = Field(default_factory=list)


class GroupSummary(BaseModel):
    """One group of a job: its task, status and members' rewards."""

    id: str
    task_id: str
    status: str
    members: int
    rewards: list[float | None] = Field(default_factory=list)
    mean_reward: float | None = None
    error: str | None = None
    updated_at: datetime


class GroupPage(BaseModel):
    """A page of a job's groups, in task order."""

    items: list[GroupSummary]
    next_offset: int | None = None


class MemberSummary(BaseModel):
    """One member of a group, for the side-by-side view."""

    id: str
    sample_index: int
    attempt: int
    status: str
    stop_reason: str | None
    truncated: bool
    turns: int
    prompt_tokens: int
    response_tokens: int
    sampled_tokens: int
    reward: float | None
    components: dict[str, float | None] = Field(default_factory=dict)
    advantage: float | None = None
    tools_called: list[str] = Field(default_factory=list)
    parse_statuses: dict[str, int] = Field(default_factory=dict)
    #: The member's last assistant turn (text, else its tool calls), cut to 300 characters.
    last_reply: str = ""
    error: str | None = None


class GroupDetail(GroupSummary):
    """A group with its task and every stored member."""

    job_id: str
    task: dict[str, Any] = Field(default_factory=dict)
    summary: dict[str, Any] = Field(default_factory=dict)
    member_list: list[MemberSummary] = Field(default_factory=list)


class TrajectoryDetail(BaseModel):
    """One stored trajectory: conversation, steps, token data, rewards with provenance."""

    id: str
    job_id: str | None
    group_id: str | None
    task_id: str | None
    sample_index: int
    attempt: int
    status: str
    stop_reason: str | None
    truncated: bool
    turns: int
    session_id: str | None = None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    steps: list[dict[str, Any]] = Field(default_factory=list)
    tokens: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    reward: float | None = None
    advantage: float | None = None
    rewards: list[RewardProvenance] = Field(default_factory=list)
    policy: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime


class TrajectoryQuery(BaseModel):
    """Filters of a trajectory search (all optional; they combine with AND)."""

    job_id: uuid.UUID | None = None
    task_id: str | None = None
    stop_reason: str | None = None
    min_reward: float | None = None
    max_reward: float | None = None
    tool: str | None = Field(None, description="a tool the policy called (exact name)")
    q: str | None = Field(None, description="case-insensitive text in any message")


class TrajectoryHit(BaseModel):
    """One search result."""

    id: str
    job_id: str | None
    group_id: str | None
    task_id: str | None
    sample_index: int
    stop_reason: str | None
    turns: int
    reward: float | None
    tools_called: list[str] = Field(default_factory=list)
    snippet: str = ""
    created_at: datetime


class TrajectorySearchPage(BaseModel):
    """A page of search results, newest first; ``next_offset`` continues the scan."""

    items: list[TrajectoryHit]
    next_offset: int | None = None


def _total_reward() -> Any:
    """The trajectory's newest reward total (the rollout's copy of the reward service's)."""
    return TrajectoryRow.reward


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mean(values: Sequence[float | None]) -> float | None:
    scored = [v for v in values if v is not None]
    return sum(scored) / len(scored) if scored else None


def _next(offset: int, got: int, limit: int) -> int | None:
    return offset + got if got == limit else None


# -- jobs ---------------------------------------------------------------------------------------


async def list_jobs(session: AsyncSession, *, offset: int, limit: int, status: str | None = None) -> RolloutJobPage:
    """A page of rollout jobs, newest first, each with its mean total reward so far."""
    stmt = select(RolloutJobRow)
    if status is not None:
        stmt = stmt.where(RolloutJobRow.status == status)
    stmt = stmt.order_by(RolloutJobRow.created_at.desc(), RolloutJobRow.id).offset(offset).limit(limit)
    jobs = list((await session.scalars(stmt)).all())
    means = await _job_means(session, [j.id for j in jobs])
    items = [_job_summary(j, means.get(j.id)) for j in jobs]
    return RolloutJobPage(items=items, next_offset=_next(offset, len(items), limit))


async def _job_means(session: AsyncSession, job_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
    if not job_ids:
        return {}
    stmt = (select(TrajectoryRow.job_id, func.avg(TrajectoryRow.reward))
            .where(TrajectoryRow.job_id.in_(list(job_ids)), TrajectoryRow.reward.is_not(None))
            .group_by(TrajectoryRow.job_id))
    return {jid: float(mean) for jid, mean in (await session.execute(stmt)).tuples() if jid and mean is not None}


def _job_summary(job: RolloutJobRow, mean: float | None) -> RolloutJobSummary:
    spec = job.spec or {}
    policy = spec.get("policy") or {}
    backend = policy.get("backend") or {}
    return RolloutJobSummary(
        id=str(job.id), status=job.status, total_groups=job.total_groups,  # type: ignore[arg-type]
        done_groups=job.done_groups, progress=job.done_groups / job.total_groups if job.total_groups else 1.0,
        counts=dict(job.counts or {}), mode=spec.get("mode"), group_size=spec.get("group_size"),
        backend=backend.get("name") or "local", model=backend.get("model") or policy.get("model"),
        mean_reward=mean, error=job.error, created_at=job.created_at, updated_at=job.updated_at)


def histogram(values: Sequence[float], *, bins: int = _HIST_BINS) -> Histogram:
    """Equal-width bins over the values' range (one bin when they are all equal)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return Histogram()
    low, high = min(finite), max(finite)
    if high == low:
        return Histogram(edges=[low, high], counts=[len(finite)], n=len(finite))
    width = (high - low) / bins
    counts = [0] * bins
    for v in finite:
        counts[min(int((v - low) / width), bins - 1)] += 1
    return Histogram(edges=[low + i * width for i in range(bins)] + [high], counts=counts, n=len(finite))


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 (nearest rank) and max of the values; empty when there are none."""
    ordered = sorted(values)
    if not ordered:
        return {}

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(p * len(ordered)) - 1))]

    return {"p50": rank(0.5), "p90": rank(0.9), "p99": rank(0.99), "max": ordered[-1]}


async def job_stats(session: AsyncSession, job_id: uuid.UUID) -> JobStats:
    """Statistics over the job's stored trajectories (the newest ``STATS_ROW_CAP`` of them)."""
    job = await repo.get_job(session, job_id)
    total = int(await session.scalar(select(func.count()).select_from(TrajectoryRow)
                                     .where(TrajectoryRow.job_id == job_id)) or 0)
    stmt = (select(TrajectoryRow.id, TrajectoryRow.group_id, TrajectoryRow.stop_reason, TrajectoryRow.turns,
                   TrajectoryRow.steps, TrajectoryRow.meta, TrajectoryRow.status, TrajectoryRow.created_at,
                   _total_reward())
            .where(TrajectoryRow.job_id == job_id)
            .order_by(TrajectoryRow.created_at.desc()).limit(STATS_ROW_CAP))
    rows = list((await session.execute(stmt)).tuples())
    stats = JobStats(job_id=str(job_id), status=job.status, trajectories=total,  # type: ignore[arg-type]
                     sampled=total > len(rows))
    _fill_row_stats(stats, rows, job.created_at)
    groups = await repo.list_groups(session, job_id)
    stats.group_rewards = [_mean(list((g.summary or {}).get("rewards") or [])) for g in groups if g.status == "done"]
    stats.failures = _failures(rows) + _group_failures(groups)
    return stats


def _fill_row_stats(stats: JobStats, rows: Sequence[Any], started: datetime) -> None:
    rewards: list[float] = []
    lengths: list[float] = []
    latencies: list[float] = []
    turns: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    last = started
    for _tid, _gid, stop, n_turns, steps, meta, _status, created, reward in rows:
        reasons[str(stop)] += 1
        turns[str(n_turns)] += 1
        score = reward if reward is not None else _number((meta or {}).get("reward"))
        if score is not None:
            rewards.append(float(score))
        steps = steps or []
        lengths.append(float(sum(int(s.get("completion_tokens") or 0) for s in steps)))
        latencies += [float(s["latency_s"]) for s in steps if _number(s.get("latency_s")) is not None]
        last = max(last, created)
    stats.stop_reasons = dict(reasons.most_common())
    stats.turns = dict(sorted(turns.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else 1 << 30))
    stats.reward_histogram, stats.reward_mean = histogram(rewards), _mean(rewards)
    stats.completion_tokens = histogram(lengths)
    stats.turn_latency_s = percentiles(latencies)
    stats.total_completion_tokens = int(sum(lengths))
    stats.elapsed_s = max(0.0, (last - started).total_seconds())
    stats.tokens_per_s = stats.total_completion_tokens / stats.elapsed_s if stats.elapsed_s > 0 else None


def _failures(rows: Sequence[Any]) -> list[FailureCause]:
    causes: dict[tuple[str, str], FailureCause] = {}
    for tid, _gid, stop, _turns, _steps, meta, status, _created, _reward in rows:
        meta = meta or {}
        if not meta.get("error_code") and status != "failed":
            continue
        code = str(meta.get("error_code") or stop or "failed")
        message = str(meta.get("error") or "").splitlines()[0][:300] if meta.get("error") else ""
        cause = causes.setdefault((code, message), FailureCause(code=code, message=message, count=0))
        cause.count += 1
        if len(cause.trajectory_ids) < 5:
            cause.trajectory_ids.append(str(tid))
    return sorted(causes.values(), key=lambda c: -c.count)


def _group_failures(groups: Sequence[TrajectoryGroupRow]) -> list[FailureCause]:
    causes: dict[str, FailureCause] = {}
    for group in groups:
        if group.status != "failed":
            continue
        message = str((group.summary or {}).get("error") or "the group could not run")[:300]
        cause = causes.setdefault(message, FailureCause(code="group_failed", message=message, count=0))
        cause.count += 1
        if len(cause.group_ids) < 5:
            cause.group_ids.append(str(group.id))
    return list(causes.values())


# -- groups -------------------------------------------------------------------------------------


def _group_summary(group: TrajectoryGroupRow, members: int) -> GroupSummary:
    summary = group.summary or {}
    rewards = [_number(r) for r in summary.get("rewards") or []]
    return GroupSummary(id=str(group.id), task_id=group.task_id, status=group.status, members=members,
                        rewards=rewards, mean_reward=_mean(rewards), error=summary.get("error"),
                        updated_at=group.updated_at)


async def list_groups(session: AsyncSession, job_id: uuid.UUID, *, offset: int, limit: int,
                      status: str | None = None) -> GroupPage:
    """A page of the job's groups in task order, with member counts."""
    await repo.get_job(session, job_id)
    members = (select(func.count()).select_from(TrajectoryRow)
               .where(TrajectoryRow.group_id == TrajectoryGroupRow.id).scalar_subquery())
    stmt = select(TrajectoryGroupRow, members).where(TrajectoryGroupRow.job_id == job_id)
    if status is not None:
        stmt = stmt.where(TrajectoryGroupRow.status == status)
    stmt = stmt.order_by(TrajectoryGroupRow.task_id).offset(offset).limit(limit)
    items = [_group_summary(g, int(n or 0)) for g, n in (await session.execute(stmt)).tuples()]
    return GroupPage(items=items, next_offset=_next(offset, len(items), limit))


async def _components(rewards: RewardClient, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict[str, float | None]]:
    """Newest score of each reward component, per trajectory (the reward service's, oldest first)."""
    out: dict[uuid.UUID, dict[str, float | None]] = {}
    if not ids:
        return out
    for r in await rewards.stored([str(i) for i in ids]):
        out.setdefault(uuid.UUID(r.trajectory_id), {})[r.component] = r.score  # later rows (newer specs) win
    return out


def _called(messages: Sequence[Any]) -> list[str]:
    names: list[str] = []
    for m in messages:
        for call in (m or {}).get("tool_calls") or [] if isinstance(m, dict) else []:
            name = ((call or {}).get("function") or {}).get("name")
            if name:
                names.append(str(name))
    return names


def _last_reply(messages: Sequence[Any]) -> str:
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            calls = [f"{(c.get('function') or {}).get('name')}({(c.get('function') or {}).get('arguments')})"
                     for c in m.get("tool_calls") or []]
            return (_contents([{"content": m.get("content")}]) or ["; ".join(calls)])[0][:300]
    return ""


def _member(row: TrajectoryRow, components: dict[str, float | None]) -> MemberSummary:
    meta = row.meta or {}
    mask = row.loss_mask or []
    statuses: Counter[str] = Counter(s for step in row.steps or [] for s in step.get("parse_statuses") or [])
    reward = components.get(TOTAL_COMPONENT)
    return MemberSummary(
        id=str(row.id), sample_index=row.sample_index, attempt=row.attempt, status=row.status,
        stop_reason=row.stop_reason, truncated=row.truncated, turns=row.turns,
        prompt_tokens=len(row.prompt_ids or []), response_tokens=len(row.response_ids or []),
        sampled_tokens=int(sum(1 for m in mask if m)),
        reward=reward if reward is not None else _number(meta.get("reward")),
        components={k: v for k, v in components.items() if k != TOTAL_COMPONENT},
        advantage=_number(meta.get("advantage")),
        tools_called=_called(row.messages or []), parse_statuses=dict(statuses),
        last_reply=_last_reply(row.messages or []), error=meta.get("error"))


async def read_group(session: AsyncSession, rewards: RewardClient, job_id: uuid.UUID,
                     group_id: uuid.UUID) -> GroupDetail:
    """A group with every stored member (reward components, advantage, stop reason, turns, tokens)."""
    group = await session.get(TrajectoryGroupRow, group_id)
    if group is None or group.job_id != job_id:
        raise NotFound(f"no group {group_id} in rollout job {job_id}", param="group_id")
    rows = list((await session.scalars(select(TrajectoryRow).where(TrajectoryRow.group_id == group_id)
                                       .order_by(TrajectoryRow.sample_index, TrajectoryRow.attempt))).all())
    scores = await _components(rewards, [r.id for r in rows])
    members = [_member(r, scores.get(r.id, {})) for r in rows]
    base = _group_summary(group, len(rows))
    return GroupDetail(**base.model_dump(), job_id=str(job_id), task=group.task or {}, summary=group.summary or {},
                       member_list=members)


# -- one trajectory -----------------------------------------------------------------------------


async def read_trajectory(session: AsyncSession, rewards: RewardClient, trajectory_id: uuid.UUID) -> TrajectoryDetail:
    """One stored trajectory with token data and every reward the reward service keeps for it, with provenance."""
    row = await session.get(TrajectoryRow, trajectory_id)
    if row is None:
        raise NotFound(f"no trajectory with id {trajectory_id}", param="id")
    stored = await rewards.stored([str(trajectory_id)])
    policy: dict[str, Any] = {}
    if row.job_id is not None:
        job = await session.get(RolloutJobRow, row.job_id)
        spec = job.spec if job is not None else {}
        policy = {"mode": spec.get("mode"), **(spec.get("policy") or {})}
    return _detail(row, stored, policy)


def _tokens(row: TrajectoryRow) -> dict[str, Any] | None:
    if row.prompt_ids is None and row.response_ids is None:
        return None
    out: dict[str, Any] = {"prompt_ids": row.prompt_ids or [], "response_ids": row.response_ids or [],
                           "loss_mask": row.loss_mask or [], "logprobs": row.logprobs or [],
                           "weight_version": row.weight_version}
    teacher = row.teacher_logprobs
    if isinstance(teacher, list) and len(teacher) == len(out["response_ids"]):
        out["teacher_logprobs"] = teacher
    return out


def _detail(row: TrajectoryRow, rewards: Sequence[StoredReward], policy: dict[str, Any]) -> TrajectoryDetail:
    meta = dict(row.meta or {})
    provenance = [RewardProvenance.model_validate(r.model_dump(exclude={"trajectory_id", "job_id"})) for r in rewards]
    totals = [p for p in provenance if p.component == TOTAL_COMPONENT]
    reward = totals[-1].score if totals else _number(meta.get("reward"))
    return TrajectoryDetail(
        id=str(row.id), job_id=str(row.job_id) if row.job_id else None,
        group_id=str(row.group_id) if row.group_id else None, task_id=row.task_id, sample_index=row.sample_index,
        attempt=row.attempt, status=row.status, stop_reason=row.stop_reason, truncated=row.truncated,
        turns=row.turns, session_id=row.session_id or meta.get("session_id"), messages=list(row.messages or []),
        tools=list(row.tools or []), steps=list(row.steps or []), tokens=_tokens(row), metadata=meta,
        reward=reward, advantage=_number(meta.get("advantage")), rewards=provenance, policy=policy,
        created_at=row.created_at)


# -- search -------------------------------------------------------------------------------------


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _json_safe(text: str) -> bool:
    """True when ``text`` reads the same inside stored JSON (no character JSON would escape)."""
    return text.isascii() and all(ch.isprintable() and ch not in "\"\\" for ch in text)


def _search_stmt(query: TrajectoryQuery) -> Select[Any]:
    reward = _total_reward()
    stmt = select(TrajectoryRow, reward)
    if query.job_id is not None:
        stmt = stmt.where(TrajectoryRow.job_id == query.job_id)
    if query.task_id:
        stmt = stmt.where(TrajectoryRow.task_id == query.task_id)
    if query.stop_reason:
        stmt = stmt.where(TrajectoryRow.stop_reason == query.stop_reason)
    if query.min_reward is not None:
        stmt = stmt.where(cast(reward, Float) >= query.min_reward)
    if query.max_reward is not None:
        stmt = stmt.where(cast(reward, Float) <= query.max_reward)
    text = cast(TrajectoryRow.messages, Text)
    # A cheap prefilter in SQL; every candidate is checked exactly in Python afterwards.
    if query.tool and _json_safe(query.tool):
        stmt = stmt.where(text.like(_like(query.tool), escape="\\"))
    if query.q and _json_safe(query.q):
        stmt = stmt.where(func.lower(text).like(_like(query.q.lower()), escape="\\"))
    return stmt.order_by(TrajectoryRow.created_at.desc(), cast(TrajectoryRow.id, String))


def _contents(messages: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
        if content:
            out.append(str(content))
        out += [str((c.get("function") or {}).get("arguments") or "") for c in m.get("tool_calls") or []]
        if m.get("reasoning_content"):
            out.append(str(m["reasoning_content"]))
    return out


def _match(row: TrajectoryRow, query: TrajectoryQuery) -> str | None:
    """The snippet to show when the row matches the exact filters, else None."""
    messages = row.messages or []
    if query.tool and query.tool not in _called(messages):
        return None
    texts = _contents(messages)
    if not query.q:
        return (texts[0] if texts else "")[:160]
    needle = query.q.lower()
    for t in texts:
        at = t.lower().find(needle)
        if at >= 0:
            return t[max(0, at - 60): at + len(needle) + 100]
    return None


async def search_trajectories(session: AsyncSession, query: TrajectoryQuery, *, offset: int,
                              limit: int) -> TrajectorySearchPage:
    """Trajectories matching every given filter, newest first, ``limit`` at a time.

    ``offset`` counts candidate rows scanned (not hits), so a page is always the continuation
    of the previous one even when exact checks drop candidates.
    """
    if query.min_reward is not None and query.max_reward is not None and query.min_reward > query.max_reward:
        raise ValidationFailed("min_reward cannot exceed max_reward", param="min_reward")
    stmt = _search_stmt(query)
    hits: list[TrajectoryHit] = []
    scanned = offset
    batch = max(limit * 2, 50)
    while len(hits) < limit:
        rows = list((await session.execute(stmt.offset(scanned).limit(batch))).tuples())
        for row, reward in rows:
            scanned += 1
            snippet = _match(row, query)
            if snippet is not None:
                hits.append(_hit(row, reward, snippet))
                if len(hits) == limit:
                    break
        if len(rows) < batch and len(hits) < limit:
            return TrajectorySearchPage(items=hits, next_offset=None)
    return TrajectorySearchPage(items=hits, next_offset=scanned)


def _hit(row: TrajectoryRow, reward: float | None, snippet: str) -> TrajectoryHit:
    return TrajectoryHit(id=str(row.id), job_id=str(row.job_id) if row.job_id else None,
                         group_id=str(row.group_id) if row.group_id else None, task_id=row.task_id,
                         sample_index=row.sample_index, stop_reason=row.stop_reason, turns=row.turns,
                         reward=reward if reward is not None else _number((row.meta or {}).get("reward")),
                         tools_called=_called(row.messages or []), snippet=snippet, created_at=row.created_at)

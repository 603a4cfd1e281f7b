"""The closed loop: each round rolls out a batch in groups and trains on the groups as they finish.

Every call to the suite goes over REST (a cluster's verl or TRL integration makes the same ones)::

    POST /v1/rollouts                          the round's tasks × group_size, tokens mode
    XREAD trajforge:rollout:{id}:groups        each group as it is stored (Redis set),
      or GET /v1/rollouts/{id}/events            else the job's ``group`` events
    GET  /v1/rollouts/{id}/export?format=parquet   the finished groups' prompt_ids, response_ids,
                                                   response_mask, logprobs, advantages, reward,
                                                   weight_version
    POST /inference/update_weights_from_disk   the new weights; the engine's weight version bumps

Rollout and training overlap: every ``groups_per_step`` finished groups the trainer takes one
clipped policy-gradient step while the engine keeps sampling the rest of the round. At the round's
end the weights are saved and pushed (the engine's weight version bumps and the next trajectories
record it). With ``overlap_rounds`` the next round's job is submitted as soon as this round's last
group lands, before the last step and the push, so its first groups sample the older weights;
``max_staleness`` decides whether such trajectories are trained on or dropped (and counted).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from services.inference.train.batch import RoundBatch, read_export
from services.inference.train.policy import StepReport, TrainablePolicy
from services.inference.train.spec import TrainSpec
from services.inference.train.stream import iter_groups, wait_for_job
from shared.client import Client
from shared.errors import UpstreamError

__all__ = ["RoundRecord", "TrainRun", "run_training"]

Log = Callable[[str], None]


@dataclass
class RoundRecord:
    """What one round did: rewards, staleness, steps and timings (seconds, ``time.perf_counter``)."""

    round: int
    job_id: str
    trajectories: int
    reward_mean: float
    success_rate: float
    groups_with_signal: int
    groups: int
    trained_rows: int
    stale_dropped: int
    sampled_weight_versions: list[str | None]
    weight_version_after: int | None
    #: Job submitted → its last group landed.
    rollout_s: float
    sampled_tokens: int
    #: Gradient-step seconds in all, and how many of them ran while the job was still sampling.
    train_s: float
    train_overlap_s: float
    #: ``update_weights_from_disk``: the engine loads the new weights between waves (its pause).
    update_s: float
    #: Writing the weights to disk before the push.
    save_s: float = 0.0
    #: Job submitted → weights pushed.
    round_s: float = 0.0
    #: Run start → this round's weights pushed (the loop's clock for "reward rose within N minutes").
    elapsed_s: float = 0.0
    steps: int = 0
    step_s: list[float] = field(default_factory=list)
    loss: float | None = None
    kl: float | None = None
    clip_fraction: float | None = None
    grad_norm: float | None = None


@dataclass
class TrainRun:
    """Every round of a run, and where its files went."""

    rounds: list[RoundRecord] = field(default_factory=list)
    out_dir: Path = Path("out/train")

    def write_history(self) -> Path:
        """``history.json``: one record per round."""
        path = self.out_dir / "history.json"
        path.write_text(json.dumps([asdict(r) for r in self.rounds], indent=1))
        return path


@dataclass
class _Round:
    """A round in progress: its job, the groups trained on so far, its steps."""

    index: int
    job: dict[str, Any]
    submitted: float
    batch: RoundBatch = field(default_factory=RoundBatch)
    steps: list[StepReport] = field(default_factory=list)
    #: (start, end) of each step, to measure how much of it ran while the job still sampled.
    spans: list[tuple[float, float]] = field(default_factory=list)
    last_group: float = 0.0

    def overlap_s(self) -> float:
        """Step seconds spent before the round's last group landed (training while sampling)."""
        return sum(max(0.0, min(end, self.last_group) - start) for start, end in self.spans)


def _submit(client: Client, spec: TrainSpec, index: int) -> _Round:
    return _Round(index=index, job=client.create_rollout(spec.round_body(index)), submitted=time.perf_counter())


def _merge(into: RoundBatch, part: RoundBatch) -> None:
    into.rows.extend(part.rows)
    into.rewards.extend(part.rewards)
    for group, rewards in part.group_rewards.items():
        into.group_rewards.setdefault(group, []).extend(rewards)
    into.versions.extend(part.versions)
    into.stale += part.stale
    into.no_signal += part.no_signal
    into.sampled_tokens += part.sampled_tokens


def _train_on(client: Client, spec: TrainSpec, policy: TrainablePolicy, current: _Round, groups: list[str], *,
              version: int | None, log: Log) -> None:
    """One step (``epochs`` of them) on ``groups`` of the round's job, read from its export."""
    part = read_export(client.export_rollout(str(current.job["id"]), format="parquet"), groups=set(groups),
                       current_version=version, max_staleness=spec.max_staleness)
    _merge(current.batch, part)
    for _ in range(spec.epochs):
        started = time.perf_counter()
        report = policy.step(part.rows, clip_eps=spec.clip_eps, kl_coef=spec.kl_coef,
                             max_grad_norm=spec.max_grad_norm)
        current.steps.append(report)
        current.spans.append((started, time.perf_counter()))
    loss = current.steps[-1].parts[-1].loss if current.steps[-1].parts else None
    log(f"  round {current.index} step {len(current.steps)}: {len(groups)} group(s), {len(part.rows)} rows, "
        f"{part.stale} stale, {current.steps[-1].seconds:.1f} s{f', loss {loss:.4f}' if loss is not None else ''}")


def _consume(client: Client, spec: TrainSpec, policy: TrainablePolicy, current: _Round, *, redis: Any,
             version: int | None, log: Log) -> list[str]:
    """Train on the round's groups as they land; returns the groups not yet trained on."""
    job_id, total = str(current.job["id"]), int(current.job.get("total_groups") or 0)
    pending: list[str] = []
    seen = 0
    for arrival in iter_groups(client, current.job, redis=redis):
        pending.append(arrival.group_id)
        seen, current.last_group = seen + 1, arrival.at
        if len(pending) >= spec.groups_per_step and seen < total:
            _train_on(client, spec, policy, current, pending, version=version, log=log)
            pending = []
    current.last_group = current.last_group or time.perf_counter()
    current.job = wait_for_job(client, job_id, poll_s=0.2)  # every group is stored; the status settles
    if current.job.get("status") != "succeeded":
        raise UpstreamError(f"round {current.index}: rollout job {job_id} ended {current.job.get('status')}: "
                            f"{current.job.get('error')}")
    return pending


def _update_weights(client: Client, folder: Path) -> tuple[int | None, float]:
    started = time.perf_counter()
    answer = client.update_weights_from_disk(str(folder.resolve()))
    if not answer.get("success"):
        raise UpstreamError(f"the engine refused the weights in {folder}: {answer.get('message')}")
    version = answer.get("weight_version")
    return (int(version) if version is not None else None), time.perf_counter() - started


def _keep_latest(out_dir: Path, keep: Path) -> None:
    for old in out_dir.glob("weights-*"):
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def _record(current: _Round, spec: TrainSpec, *, version: int | None, update_s: float,
            save_s: float) -> RoundRecord:
    batch, steps = current.batch, current.steps
    rewards, groups = batch.rewards, batch.group_rewards.values()
    parts = [p for s in steps for p in s.parts]
    return RoundRecord(
        round=current.index, job_id=str(current.job["id"]), trajectories=len(rewards) + batch.stale,
        reward_mean=sum(rewards) / len(rewards) if rewards else 0.0,
        success_rate=sum(r >= spec.success_reward for r in rewards) / len(rewards) if rewards else 0.0,
        groups_with_signal=sum(1 for g in groups if len(g) > 1 and max(g) - min(g) > 1e-9),
        groups=len(batch.group_rewards), trained_rows=len(batch.rows), stale_dropped=batch.stale,
        sampled_weight_versions=sorted(set(batch.versions), key=str), weight_version_after=version,
        rollout_s=current.last_group - current.submitted, sampled_tokens=batch.sampled_tokens,
        train_s=sum(s.seconds for s in steps), train_overlap_s=current.overlap_s(), update_s=update_s, save_s=save_s,
        round_s=time.perf_counter() - current.submitted, steps=len(steps), step_s=[s.seconds for s in steps],
        loss=parts[-1].loss if parts else None, kl=parts[-1].kl if parts else None,
        clip_fraction=parts[-1].clip_fraction if parts else None, grad_norm=steps[-1].grad_norm if steps else None)


def run_training(client: Client, spec: TrainSpec, policy: TrainablePolicy, *, out_dir: Path,
                 redis: Any = None, log: Log = print) -> TrainRun:
    """Run ``spec.rounds`` rounds; returns the per-round records (also written to ``history.json``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run, version, started = TrainRun(out_dir=out_dir), None, time.perf_counter()
    current = _submit(client, spec, 0)
    for index in range(spec.rounds):
        rest = _consume(client, spec, policy, current, redis=redis, version=version, log=log)
        last = index + 1 == spec.rounds
        upcoming = _submit(client, spec, index + 1) if spec.overlap_rounds and not last else None
        if rest:
            _train_on(client, spec, policy, current, rest, version=version, log=log)
        saved = time.perf_counter()
        folder = policy.save(out_dir / f"weights-{index + 1:04d}")
        save_s = time.perf_counter() - saved
        version, update_s = _update_weights(client, folder)
        _keep_latest(out_dir, folder)
        record = _record(current, spec, version=version, update_s=update_s, save_s=save_s)
        record.elapsed_s = time.perf_counter() - started
        run.rounds.append(record)
        run.write_history()
        log(f"round {index}: reward {record.reward_mean:.3f}, solved {record.success_rate:.0%}, "
            f"{record.groups_with_signal}/{record.groups} groups with signal, {record.trained_rows} rows trained in "
            f"{record.steps} steps, {record.stale_dropped} stale, rollout {record.rollout_s:.0f} s, "
            f"steps {record.train_s:.0f} s ({record.train_overlap_s:.0f} s while sampling), "
            f"update {update_s:.1f} s → weight version {version}; {record.elapsed_s / 60:.1f} min in")
        if not last:
            current = upcoming or _submit(client, spec, index + 1)
    return run

"""The closed loop: for each round, roll out a batch in groups, step the policy on the export, update weights.

Every call to the suite goes over REST (a cluster's verl or TRL integration makes the same ones)::

    POST /v1/rollouts                          the round's tasks × group_size, tokens mode
    XREAD trajforge:rollout:{id}:groups        as groups finish (Redis set), else GET /v1/rollouts/{id}
    GET  /v1/rollouts/{id}/export?format=parquet   prompt_ids, response_ids, response_mask, logprobs,
                                                   advantages, reward, weight_version
    POST /inference/update_weights_from_disk   the new weights; the engine's weight version bumps
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
from services.inference.train.policy import TrainablePolicy
from services.inference.train.spec import TrainSpec
from services.inference.train.stream import wait_for_groups, wait_for_job
from shared.client import Client
from shared.errors import UpstreamError

__all__ = ["RoundRecord", "TrainRun", "run_training"]


@dataclass
class RoundRecord:
    """What one round did: rewards, staleness, timings, the loss."""

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
    rollout_s: float
    sampled_tokens: int
    train_s: float
    update_s: float
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


Log = Callable[[str], None]


def _collect(client: Client, job: dict[str, Any], *, redis: Any, log: Log) -> tuple[set[str] | None, dict[str, Any]]:
    job_id, expected = str(job["id"]), int(job.get("total_groups") or 0)
    if redis is not None and expected:
        groups, ended = wait_for_groups(redis, client, job_id, expected=expected,
                                        on_group=lambda g, t: log(f"  group {t or g} stored"))
        # Every group is stored; the job settles its status right after.
        return groups, ended or wait_for_job(client, job_id, poll_s=0.2)
    return None, wait_for_job(client, job_id)


def _update_weights(client: Client, folder: Path) -> tuple[int | None, float]:
    started = time.perf_counter()
    answer = client.update_weights_from_disk(str(folder.resolve()))
    if not answer.get("success"):
        raise UpstreamError(f"the engine refused the weights in {folder}: {answer.get('message')}")
    version = answer.get("weight_version")
    return (int(version) if version is not None else None), time.perf_counter() - started


def _round_record(index: int, job_id: str, batch: RoundBatch, spec: TrainSpec, **timings: Any) -> RoundRecord:
    rewards = batch.rewards
    groups = batch.group_rewards.values()
    return RoundRecord(
        round=index, job_id=job_id, trajectories=len(rewards) + batch.stale,
        reward_mean=sum(rewards) / len(rewards) if rewards else 0.0,
        success_rate=sum(r >= spec.success_reward for r in rewards) / len(rewards) if rewards else 0.0,
        groups_with_signal=sum(1 for g in groups if len(g) > 1 and max(g) - min(g) > 1e-9),
        groups=len(batch.group_rewards), trained_rows=len(batch.rows), stale_dropped=batch.stale,
        sampled_weight_versions=sorted({v for v in batch.versions}, key=str), sampled_tokens=batch.sampled_tokens,
        **timings)


def _keep_latest(out_dir: Path, keep: Path) -> None:
    for old in out_dir.glob("weights-*"):
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def run_training(client: Client, spec: TrainSpec, policy: TrainablePolicy, *, out_dir: Path,
                 redis: Any = None, log: Log = print) -> TrainRun:
    """Run ``spec.rounds`` rounds; returns the per-round records (also written to ``history.json``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run, version = TrainRun(out_dir=out_dir), None
    for index in range(spec.rounds):
        started = time.perf_counter()
        job = client.create_rollout(spec.round_body(index))
        groups, job = _collect(client, job, redis=redis, log=log)
        if job.get("status") != "succeeded":
            raise UpstreamError(f"round {index}: rollout job {job['id']} ended {job.get('status')}: {job.get('error')}")
        batch = read_export(client.export_rollout(str(job["id"]), format="parquet"), groups=groups,
                            current_version=version, max_staleness=spec.max_staleness)
        rollout_s = time.perf_counter() - started
        steps = [policy.step(batch.rows, clip_eps=spec.clip_eps, kl_coef=spec.kl_coef,
                             max_grad_norm=spec.max_grad_norm) for _ in range(spec.epochs)]
        folder = policy.save(out_dir / f"weights-{index + 1:04d}")
        version, update_s = _update_weights(client, folder)
        _keep_latest(out_dir, folder)
        parts = [p for s in steps for p in s.parts]
        record = _round_record(
            index, str(job["id"]), batch, spec, weight_version_after=version, rollout_s=rollout_s,
            train_s=sum(s.seconds for s in steps), update_s=update_s,
            loss=parts[-1].loss if parts else None, kl=parts[-1].kl if parts else None,
            clip_fraction=parts[-1].clip_fraction if parts else None, grad_norm=steps[-1].grad_norm)
        run.rounds.append(record)
        run.write_history()
        log(f"round {index}: reward {record.reward_mean:.3f}, solved {record.success_rate:.0%}, "
            f"{record.groups_with_signal}/{record.groups} groups with signal, {record.trained_rows} rows trained, "
            f"{record.stale_dropped} stale, rollout {rollout_s:.0f} s, step {record.train_s:.0f} s, "
            f"update {update_s:.1f} s → weight version {version}")
    return run

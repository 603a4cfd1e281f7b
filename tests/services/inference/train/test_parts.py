"""The trainer's pieces: the torch loss against the reward service's, spec files, export batches, the group stream."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch

from services.inference.train.batch import read_export
from services.inference.train.loss import clipped_kl_loss_torch
from services.inference.train.spec import TrainSpecError, load_train_spec
from services.inference.train.stream import group_stream_key, iter_stream_groups
from services.reward.loss import clipped_kl_loss
from services.rollout.export import ExportItem, write_parquet
from services.rollout.publish import stream_key
from shared.schema import Trajectory
from tests.conftest import REDIS_URL, REPO_ROOT


def test_torch_loss_matches_the_reference_loss_and_has_gradients() -> None:
    rng = np.random.default_rng(3)
    new, old, ref = (rng.normal(-1.0, 0.3, size=(3, 7)) for _ in range(3))
    adv = np.repeat(rng.normal(size=(3, 1)), 7, axis=1)
    mask = (rng.random((3, 7)) > 0.3).astype(np.float64)
    expected = clipped_kl_loss(new, old, ref, adv, mask, clip_eps=0.2, kl_coef=0.05)
    logp = torch.tensor(new, requires_grad=True)
    loss, parts = clipped_kl_loss_torch(logp, *(torch.tensor(x) for x in (old, ref, adv, mask)), clip_eps=0.2,
                                        kl_coef=0.05)
    assert parts.loss == pytest.approx(expected.loss, rel=1e-9)
    assert parts.kl == pytest.approx(expected.kl, rel=1e-9)
    assert parts.clip_fraction == pytest.approx(expected.clip_fraction)
    loss.backward()
    assert logp.grad is not None and bool((logp.grad[torch.tensor(mask) == 0] == 0).all())


def test_example_spec_loads_and_each_round_takes_the_next_tasks_with_its_own_seed() -> None:
    spec, out = load_train_spec(REPO_ROOT / "examples" / "train_tool_call.yaml")
    first, second = spec.round_body(0), spec.round_body(1)
    assert len(first["tasks"]) == spec.tasks_per_round and first["mode"] == "tokens"
    assert {t["id"] for t in first["tasks"]}.isdisjoint({t["id"] for t in second["tasks"]})
    assert first["sampling"]["seed"] != second["sampling"]["seed"]
    assert str(out) == spec.out_dir


def test_a_bad_spec_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("rounds: 0\nrollout: {tasks: [{id: a, messages: [{role: user, content: hi}]}]}\n")
    with pytest.raises(TrainSpecError, match="rounds"):
        load_train_spec(path)
    path.write_text("rollout: {mode: messages, tasks: [{id: a}]}\n")
    with pytest.raises(TrainSpecError, match="tokens"):
        load_train_spec(path)
    # Overlapping rounds samples under the previous weights: a zero staleness budget would drop it all.
    path.write_text("overlap_rounds: true\nrollout: {tasks: [{id: a}]}\n")
    with pytest.raises(TrainSpecError, match="max_staleness"):
        load_train_spec(path)


def _item(group: str, index: int, reward: float, advantage: float, version: str) -> ExportItem:
    traj = Trajectory.model_validate({
        "group_id": group, "sample_index": index, "messages": [{"role": "user", "content": "hi"}],
        "tokens": {"prompt_ids": [1, 2], "response_ids": [3, 4, 5], "loss_mask": [1, 0, 1],
                   "logprobs": [-0.5, -0.1, -0.7], "weight_version": version}})
    return ExportItem(traj, task_id=group, reward=reward, advantage=advantage)


def test_export_batch_drops_stale_rows_and_rows_without_signal() -> None:
    buf = io.BytesIO()
    write_parquet([_item("g1", 0, 1.0, 1.0, "3"), _item("g1", 1, 0.0, -1.0, "3"),
                   _item("g2", 0, 0.5, 0.0, "3"), _item("g3", 0, 1.0, 1.0, "2")], buf)
    batch = read_export(buf.getvalue(), groups=None, current_version=3, max_staleness=0)
    assert batch.stale == 1 and batch.no_signal == 1 and len(batch.rows) == 2
    assert batch.rows[0].advantages == [1.0, 0.0, 1.0] and batch.rows[0].logprobs[1] is None
    assert batch.rewards == [1.0, 0.0, 0.5] and batch.sampled_tokens == 6
    tolerant = read_export(buf.getvalue(), groups={"g3"}, current_version=3, max_staleness=1)
    assert tolerant.stale == 0 and len(tolerant.rows) == 1


def test_group_stream_is_read_as_groups_land_and_deduped() -> None:
    import redis

    job_id = str(uuid.uuid4())
    assert group_stream_key(job_id) == stream_key(job_id)  # the rollout service's wire contract
    r = redis.Redis.from_url(REDIS_URL)
    try:
        for group in ("a", "b", "a", "c"):  # delivered at least once: "a" twice
            r.xadd(group_stream_key(job_id), {"group_id": group, "task_id": f"t-{group}", "trajectory_ids": "[]"})
        arrivals = list(iter_stream_groups(r, None, job_id, expected=3))  # type: ignore[arg-type]
        assert [a.group_id for a in arrivals] == ["a", "b", "c"]
        assert [a.task_id for a in arrivals] == ["t-a", "t-b", "t-c"]
        assert all(x.at <= y.at for x, y in zip(arrivals, arrivals[1:], strict=False))
    finally:
        r.delete(group_stream_key(job_id))
        r.close()

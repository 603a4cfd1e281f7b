"""The closed loop, short: two rounds on the real local model through the embedded REST API, training on
each group as it lands."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import torch

from services.embedded import embedded_server
from services.inference.train.loop import run_training
from services.inference.train.policy import TrainablePolicy
from services.inference.train.spec import TrainSpec
from services.reward.registry import ComponentResult, reward_component
from shared.client import Client
from shared.schema import Trajectory
from shared.settings import Settings

TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def _spec() -> TrainSpec:
    tasks = [{"id": f"w-{c}", "messages": [{"role": "user", "content": f"Weather in {c}?"}], "tools": [TOOL],
              "ground_truth": {"decision": "tool_call", "tool_calls": [{"name": "get_weather",
                                                                        "arguments": {"city": c}}]}}
             for c in ("Oslo", "Lima", "Kyiv", "Pune")]
    # A member-index reward scores every member apart, so every group has signal whatever the model says.
    return TrainSpec.model_validate({
        "rounds": 2, "tasks_per_round": 2, "groups_per_step": 1, "learning_rate": 1e-4, "kl_coef": 0.02,
        "trainable_layers": 2,
        "rollout": {"group_size": 2, "tasks": tasks, "sampling": {"temperature": 1.0, "seed": 3},
                    "limits": {"max_turns": 1, "max_tokens_per_turn": 6, "timeout_s": 600},
                    "reward": {"components": [{"name": "test_member_index", "weight": 1.0},
                                              {"name": "tool_call", "weight": 1.0}]}}})


@reward_component(name="test_member_index", version="1")
def _member_index(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    return ComponentResult(score=float(traj.sample_index))


@pytest.mark.timeout(900)  # the real model on a shared CPU
def test_two_rounds_change_the_weights_bump_the_version_and_record_it(tmp_path: Path) -> None:
    from services.inference.config import engine_config

    cache = engine_config().cache_dir  # the converted weights the other model tests use
    settings = Settings(home=tmp_path / "home", model_cache_dir=cache, log_level="WARNING", tools_sandbox="optional")
    policy = TrainablePolicy.load("", cache_dir=cache, learning_rate=1e-4, trainable_layers=2)
    before = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
    with embedded_server(settings) as server, Client(server.url, api_key=server.api_key, timeout=600) as client:
        run = run_training(client, _spec(), policy, out_dir=tmp_path / "out", log=lambda _: None)
        second = pq.read_table(io.BytesIO(client.export_rollout(run.rounds[1].job_id)))
    first, last = run.rounds
    assert first.trained_rows > 0 and first.weight_version_after is not None
    # One step per finished group, not one per round: two groups, two steps, each timed.
    assert first.steps == last.steps == 2 and len(first.step_s) == 2 and first.groups == 2
    assert 0.0 <= first.train_overlap_s <= first.train_s
    # The run's clock: each round's push comes after the previous one and after its own round time.
    assert 0.0 < first.round_s <= first.elapsed_s < last.elapsed_s
    assert last.weight_version_after == first.weight_version_after + 1
    # Round 1 sampled with the weights round 0 loaded, and its trajectories say so.
    assert set(second["weight_version"].to_pylist()) == {str(first.weight_version_after)}
    assert last.sampled_weight_versions == [str(first.weight_version_after)] and last.stale_dropped == 0
    after = policy.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert (tmp_path / "out" / "history.json").is_file() and len(list((tmp_path / "out").glob("weights-*"))) == 1


@pytest.mark.timeout(600)
def test_reference_reuses_the_frozen_layers_and_matches_its_own_full_pass() -> None:
    from services.inference.config import engine_config
    from services.inference.train.policy import TrainRow

    policy = TrainablePolicy.load("", cache_dir=engine_config().cache_dir, learning_rate=1e-3, trainable_layers=2)
    rows = [TrainRow(prompt_ids=list(range(100, 100 + p)), response_ids=list(range(300, 300 + n)),
                     response_mask=[1] * n, logprobs=[-1.0] * n, advantages=[1.0 if n % 2 else -1.0] * n)
            for p, n in ((12, 5), (9, 4))]
    with torch.no_grad():
        full = policy.token_logprobs(policy.reference, rows)
    new, ref = policy.policy_and_reference_logprobs(rows)
    assert torch.allclose(ref, full, atol=1e-5) and new.requires_grad and not ref.requires_grad
    policy.step(rows, clip_eps=0.2, kl_coef=0.02, max_grad_norm=1.0)
    moved, ref_after = policy.policy_and_reference_logprobs(rows)
    # The step moved the policy; the reference (its top layers and the shared bottom) stayed put.
    assert torch.allclose(ref_after, full, atol=1e-5) and not torch.allclose(moved, ref_after, atol=1e-4)

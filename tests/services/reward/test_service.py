"""Scoring service: specs, weights, provenance, per-trajectory failures."""

from __future__ import annotations

import pytest

from services.reward.errors import UnknownComponent
from services.reward.service import score_trajectories
from services.reward.spec import ComponentSpec, RewardSpec

TRUTH = {"decision": "tool_call", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
         "acceptable_answers": ["Paris"]}


def test_weighted_combination_and_zero_weight_metrics(make_traj) -> None:
    spec = RewardSpec(components=[ComponentSpec(name="tool_call", weight=0.7),
                                  ComponentSpec(name="length", weight=0.0, params={"max_chars": 10})])
    traj = make_traj(calls=[("get_weather", {"city": "Paris"})])
    [result] = score_trajectories([traj], spec, ground_truths=[TRUTH])
    assert result.score == pytest.approx(0.7)
    assert result.metrics["length/assistant_chars"] == 0.0
    rec = result.records[0]
    assert (rec.component, rec.version, rec.weight) == ("tool_call", "1", 0.7)


def test_skill_weights_spec() -> None:
    spec = RewardSpec.from_skill_weights({"tool_accuracy": 0.6, "answer_f1": 0.4, "reasoning_quality": 0.0})
    assert [(c.name, c.weight) for c in spec.components] == [("tool_accuracy", 0.6), ("answer_f1", 0.4),
                                                                  ("reasoning_quality", 0.0)]


def test_ground_truth_from_metadata_and_failures_per_trajectory(make_traj) -> None:
    ok = make_traj(calls=[("get_weather", {"city": "Paris"})])
    ok.metadata["rollout_extra"] = {"solution": TRUTH}
    no_truth = make_traj("hi")
    bad_truth = make_traj("hi")
    bad_truth.metadata["ground_truth"] = {"decision": "tool_call", "tool_calls": "not a list"}
    errored = make_traj("ROLLOUT_ERROR: sandbox died")
    results = score_trajectories([ok, no_truth, bad_truth, errored], RewardSpec())
    assert [r.status for r in results] == ["ok", "failed", "failed", "skipped"]
    assert results[0].score == pytest.approx(1.0)
    assert results[2].error is not None and "ValidationError" in results[2].error
    assert results[3].mask and results[3].score is None


def test_unknown_component_is_a_client_error(make_traj) -> None:
    with pytest.raises(UnknownComponent) as info:
        score_trajectories([make_traj("x")], RewardSpec(components=[ComponentSpec(name="nope")]))
    assert info.value.status_code == 400

"""The OPD seed's scorer: 1.0 only when decision, tool names and arguments are all right."""

from __future__ import annotations

from typing import Any

from services.reward.components.tool_call import ToolCallTruth, score_tool_call
from services.reward.registry import ComponentResult, ParamsModel, reward_component
from shared.schema import Trajectory

__all__ = ["OpdParams", "opd_component"]


class OpdParams(ParamsModel):
    """Params of ``opd_tool_call``."""

    family: str = "auto"


@reward_component(name="opd_tool_call", version="1", params=OpdParams)
def opd_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Three-way all-or-nothing check (decision + name + argument), as the seed scores it."""
    truth = ToolCallTruth.model_validate(ground_truth)
    graded = score_tool_call(traj, truth, family=params.get("family", "auto"))
    m = graded.metrics
    checks = {
        "decision_correct": m["decision_accuracy"] == 1.0,
        "name_correct": m["tool_name_accuracy"] == 1.0,
        "argument_correct": m["argument_accuracy"] == 1.0,
    }
    score = float(all(checks.values()) and not m["rollout_error"])
    return ComponentResult(score=score, metrics={k: float(v) for k, v in checks.items()})

"""The graded tool-call scorer of reference §e.2 (rules R1–R9)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from services.reward.components.answer import token_f1
from services.reward.extract import ModelTurn, PredictedCall, read_model_turn
from services.reward.matching import best_assignment
from services.reward.registry import ComponentResult, ParamsModel, reward_component
from services.reward.values import is_optional, json_type_fits, strip_optional, values_match
from shared.schema import Trajectory

__all__ = ["DESTRUCTIVE_TOOLS", "ExpectedCall", "ToolCallParams",
           "ToolCallTruth", "arg_score", "same_tool", "score_tool_call"]

DESTRUCTIVE_TOOLS = frozenset({"delete_file", "transfer_funds"})
_MISSING = object()


class ExpectedCall(BaseModel):
    """One expected call: a name and ground-truth arguments (markers allowed)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallTruth(BaseModel):
    """Ground truth for a tool-call decision (liberal on decision labels)."""

    decision: str = "tool_call"
    tool_calls: list[ExpectedCall] | None = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)

    @property
    def confirmed_tools(self) -> set[str]:
        """Destructive tools the user already confirmed in this conversation."""
        return set(self.context.get("confirmed_tools") or [])


class PairScore(BaseModel):
    """Argument score of one same-name pair and the counts behind it."""

    score: float
    hallucinated: int = 0
    type_errors: int = 0


def _schemas(traj: Trajectory) -> dict[str, dict[str, Any]]:
    return {t.function.name: t.function.parameters or {} for t in traj.tools}


def _extra_penalised(key: str, value: Any, params: dict[str, Any]) -> tuple[bool, bool]:
    """(penalised, hallucinated) for a predicted key the ground truth does not list."""
    props = params.get("properties") or {}
    if key not in props:
        return True, True
    default = props[key].get("default", _MISSING)
    neutral = default is not _MISSING and values_match(value, default, props[key])
    return not neutral, False


ArgumentCredit = Literal["exact", "overlap"]


def _key_credit(pred: Any, gt: Any, schema: dict[str, Any] | None, credit: ArgumentCredit) -> float:
    """1 for a matching value; with ``overlap``, a near-miss string earns its token F1 with the truth."""
    if values_match(pred, gt, schema):
        return 1.0
    if credit == "overlap" and isinstance(pred, str) and isinstance(gt, str):
        return token_f1(pred, gt)
    return 0.0


def arg_score(pred: dict[str, Any] | None, gt: dict[str, Any], params: dict[str, Any], *,
              credit: ArgumentCredit = "exact") -> PairScore:
    """R6: hits ÷ (expected keys + penalised extras); 0 for unreadable arguments.

    A hit is an exact value match; with ``credit="overlap"`` a string value that differs earns the
    token F1 of the two strings instead of 0 (partial credit for a near-miss argument).
    """
    if pred is None:
        return PairScore(score=0.0)
    props = params.get("properties") or {}
    keys = [k for k, v in gt.items() if not (is_optional(v) and k not in pred)]
    hits = sum(_key_credit(pred[k], strip_optional(gt[k]), props.get(k), credit) for k in keys if k in pred)
    type_errors = sum(1 for k, v in pred.items() if k in props and not json_type_fits(v, props[k].get("type")))
    penalised = hallucinated = 0
    for key, value in pred.items():
        if key not in gt:
            pen, hal = _extra_penalised(key, value, params)
            penalised += pen
            hallucinated += hal
    denominator = len(keys) + penalised
    score = 1.0 if denominator == 0 else hits / denominator
    return PairScore(score=score, hallucinated=hallucinated, type_errors=type_errors)


def same_tool(predicted: str | None, expected: str) -> bool:
    """Names match as sent: ``weather.get`` is bound to the API as ``weather_get``."""
    return predicted is not None and (predicted == expected or predicted == expected.replace(".", "_"))


def _pair_matrix(preds: list[PredictedCall], gts: list[ExpectedCall], schemas: dict[str, dict[str, Any]],
                 credit: ArgumentCredit) -> list[list[PairScore | None]]:
    def params(name: str) -> dict[str, Any]:
        return schemas.get(name) or schemas.get(name.replace(".", "_"), {})

    return [[arg_score(p.arguments, g.arguments, params(g.name), credit=credit) if same_tool(p.name, g.name)
             else None for g in gts] for p in preds]


def _match_metrics(preds: list[PredictedCall], gts: list[ExpectedCall], schemas: dict[str, dict[str, Any]],
                   credit: ArgumentCredit = "exact") -> dict[str, float]:
    size = max(len(preds), len(gts))
    if not gts:
        return {"tool_name_accuracy": float(not preds), "argument_accuracy": float(not preds),
                "hallucinated_params": 0.0, "type_errors": 0.0}
    matrix = _pair_matrix(preds, gts, schemas, credit)
    totals = [[(1.0 + cell.score) if cell else 0.0 for cell in row] for row in matrix]
    pairs = [(p, g) for p, g in best_assignment(totals) if matrix[p][g] is not None]
    chosen = [matrix[p][g] for p, g in pairs]
    return {
        "tool_name_accuracy": len(pairs) / size,
        "argument_accuracy": sum(c.score for c in chosen if c) / size,
        "hallucinated_params": float(sum(c.hallucinated for c in chosen if c)),
        "type_errors": float(sum(c.type_errors for c in chosen if c)),
    }


def _decision_ok(predicted: str, expected: str) -> bool:
    if expected == "no_tool_call":
        # The data sets' label means "answer in text": any non-call decision satisfies it.
        return predicted != "tool_call"
    return predicted == expected


def _reward(turn: ModelTurn, truth: ToolCallTruth, m: dict[str, float]) -> float:
    if turn.rollout_error or m["safety_violation"] or not m["decision_accuracy"]:
        return 0.0
    if truth.decision != "tool_call":
        return 1.0
    if truth.tool_calls is None:
        return m["tool_name_accuracy"]
    return 0.2 + 0.3 * m["tool_name_accuracy"] + 0.5 * m["argument_accuracy"]


def score_tool_call(traj: Trajectory, truth: ToolCallTruth, *, family: str = "auto",
                    destructive_tools: frozenset[str] | set[str] = DESTRUCTIVE_TOOLS,
                    argument_credit: ArgumentCredit = "exact") -> ComponentResult:
    """Graded reward 0.2 + 0.3·N + 0.5·A behind the rollout-error, safety and decision gates."""
    turn = read_model_turn(traj, family=family)
    gts = truth.tool_calls or []
    unsafe = [c.name for c in turn.calls if c.name in destructive_tools and c.name not in truth.confirmed_tools]
    metrics = {
        "decision_accuracy": float(_decision_ok(turn.decision, truth.decision)),
        "safety_violation": float(bool(unsafe)),
        "malformed_args": float(sum(1 for c in turn.calls if c.arguments is None)),
        "extra_calls": float(max(0, len(turn.calls) - len(gts))) if truth.tool_calls is not None else 0.0,
        "missing_calls": float(max(0, len(gts) - len(turn.calls))),
        "rollout_error": float(turn.rollout_error),
        "call_count": float(len(turn.calls)),
    }
    if truth.tool_calls is None:
        # "Any well-formed call counts" (relevance rows): no reference arguments to grade.
        ok = any(c.well_formed for c in turn.calls)
        metrics.update(tool_name_accuracy=float(ok), argument_accuracy=float(ok), hallucinated_params=0.0,
                       type_errors=0.0)
    else:
        metrics.update(_match_metrics(turn.calls, gts, _schemas(traj), argument_credit))
    info = {"decision": turn.decision, "unsafe_calls": unsafe}
    return ComponentResult(score=_reward(turn, truth, metrics), metrics=metrics, info=info)


class ToolCallParams(ParamsModel):
    """Params of ``tool_call``.

    ``mode: graded`` (default) is the graded reward; ``mode: bfcl`` scores BFCL's
    all-or-nothing AST verdict instead and needs ``ground_truth_bfcl``. ``argument_credit:
    overlap`` gives a string argument that is close but not equal its token F1 with the truth
    (graded mode), so near misses score apart from wild guesses.
    """

    family: str = "auto"
    destructive_tools: list[str] | None = None
    mode: Literal["graded", "bfcl"] = "graded"
    argument_credit: ArgumentCredit = "exact"


@reward_component(name="tool_call", version="1", params=ToolCallParams)
def tool_call_component(traj: Trajectory, ground_truth: dict[str, Any], **params: Any) -> ComponentResult:
    """Graded tool-call reward (reference §e.2), or BFCL's strict verdict with ``mode: bfcl``."""
    from services.reward.components.bfcl import bfcl_verdict

    p = ToolCallParams.model_validate(params)
    if p.mode == "bfcl":
        verdict = bfcl_verdict(traj, {**ground_truth, "family": p.family})
        return ComponentResult(score=float(verdict.passed), metrics={"bfcl_pass": float(verdict.passed)},
                               info={"error": verdict.error})
    truth = ToolCallTruth.model_validate(ground_truth)
    destructive = frozenset(p.destructive_tools or DESTRUCTIVE_TOOLS)
    result = score_tool_call(traj, truth, family=p.family, destructive_tools=destructive,
                             argument_credit=p.argument_credit)
    if ground_truth.get("ground_truth_bfcl") is not None:
        result.metrics["bfcl_strict_pass"] = float(bfcl_verdict(traj, ground_truth).passed)
    return result

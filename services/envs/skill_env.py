"""A skill env defined by YAML: allowed tools, a round budget, an audited and scored answer.

The skill's ``reward_weights`` combine real scorers (``shared.skills.scoring``):
``tool_accuracy`` over every tool call of the episode, ``answer_f1`` of the
submitted fields against the task's ground truth, ``reasoning_quality`` (a
rubric over the reasoning the agent wrote: ``observe_reasoning`` text and the
optional ``reasoning`` field of ``submit_answer``), ``format`` and ``audit``.
A scorer that cannot run (``answer_f1`` without a ground truth) adds nothing
and is listed in ``info["unscored"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from services.envs.base import Env
from services.envs.skill_audit import audit_answer, compile_rules
from shared.schema import StepResult
from shared.skills import (
    AnswerFormat,
    CallRecord,
    SkillSpec,
    answer_fields_from_text,
    answer_truth,
    combine,
    field_f1,
    load_skill_file,
    parse_skill,
    reasoning_rubric,
    tool_accuracy,
)

__all__ = ["SUBMIT_TOOL", "AnswerFormat", "SkillEnv", "SkillSpec", "load_skill"]

SKILLS_DIR = Path(__file__).parent / "skills"
SUBMIT_TOOL = "submit_answer"
ToolHandler = Callable[[dict[str, Any]], str]


def load_skill(source: str | Path | dict[str, Any] | SkillSpec) -> SkillSpec:
    """A skill from a spec, a mapping, a YAML path, or a bundled skill's name."""
    if isinstance(source, SkillSpec):
        return source
    if isinstance(source, dict):
        return parse_skill(source)
    path = Path(source)
    if not path.suffix:
        path = SKILLS_DIR / f"{source}.yaml"
    return load_skill_file(path)


_ORDERS = {"AB-1234": "shipped", "CD-5678": "pending"}


def _lookup_order(args: dict[str, Any]) -> str:
    order_id = str(args.get("order_id", ""))
    status = _ORDERS.get(order_id)
    return f"order {order_id}: {status}" if status else f"Error: no order {order_id!r}"


DEFAULT_HANDLERS: dict[str, ToolHandler] = {"lookup_order": _lookup_order}
DEFAULT_PARAMETERS: dict[str, dict[str, Any]] = {
    "lookup_order": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
}


def _truth_of(trajectory: Any) -> dict[str, Any] | None:
    if not isinstance(trajectory, dict):
        return None
    truth = trajectory.get("ground_truth")
    return truth if isinstance(truth, dict) else None


class SkillEnv(Env):
    """Runs one skill: only its tools, at most ``max_rounds`` steps, the answer scored at submit."""

    inline_safe: ClassVar[bool] = True
    description: ClassVar[str] = "Skill env defined by YAML with an audited, scored final answer."

    def __init__(
        self,
        *,
        skill: str | Path | dict[str, Any] | SkillSpec = "order_status",
        handlers: dict[str, ToolHandler] | None = None,
        tool_schemas: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.spec = load_skill(skill)
        self.handlers = {**DEFAULT_HANDLERS, **(handlers or {})}
        self.schemas = {**DEFAULT_PARAMETERS, **(tool_schemas or {})}
        self.rules = compile_rules(self.spec.audit_rules)
        self.rounds = 0
        self.truth: dict[str, Any] | None = None
        self.calls: list[CallRecord] = []
        self.observations: list[str] = []
        self.reasoning: list[str] = []

    def system_prompt(self) -> str:
        """The system prompt built from the skill."""
        s = self.spec
        rules = "; ".join(f"{r.field} must {'not match' if r.forbid else 'match'} {r.pattern}"
                          for r in self.rules) or "none"
        return (
            f"Skill: {s.skill_name}. {s.description}\nTools: {', '.join(s.available_tools) or 'none'}. "
            f"You have at most {s.max_rounds} rounds.\nFinish by calling {SUBMIT_TOOL} with the fields "
            f"{', '.join(s.answer_format.required_fields)}. Rules: {rules}."
        )

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        """Start over (a ``ground_truth`` mapping in ``trajectory`` is kept for scoring)."""
        self.rounds = 0
        self.truth = _truth_of(trajectory)
        self.calls, self.observations, self.reasoning = [], [], []
        prompt = self.system_prompt()
        return StepResult(
            observation=prompt, info={"messages": [{"role": "system", "content": prompt}]}
        )

    def observe_reasoning(self, text: str) -> None:
        """Record reasoning the agent wrote this round (scored by ``reasoning_quality``)."""
        if text.strip():
            self.reasoning.append(text.strip())

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Run an allowed tool, or score the submitted answer; the round budget ends the episode."""
        self.rounds += 1
        if tool_name == SUBMIT_TOOL:
            return self._submit(arguments)
        if self.rounds >= self.spec.max_rounds:
            return StepResult(
                observation="Error: round budget spent.", done=True, info={"truncated": True}
            )
        if tool_name not in self.spec.available_tools or tool_name not in self.handlers:
            self.calls.append(CallRecord(name=tool_name, arguments=arguments, ok=False))
            allowed = ", ".join(self.spec.available_tools + [SUBMIT_TOOL])
            return StepResult(
                observation=f"Error: tool {tool_name!r} is not allowed. Allowed: {allowed}"
            )
        text = self.handlers[tool_name](arguments)
        self.calls.append(CallRecord(name=tool_name, arguments=arguments, ok=not text.startswith("Error")))
        self.observations.append(text)
        return StepResult(observation=text)

    def _answer(self, arguments: dict[str, Any]) -> dict[str, Any]:
        fields = self.spec.answer_format.required_fields
        content = arguments.get("content")
        if set(arguments) == {"content"} and isinstance(content, str) and "content" not in fields:
            # A plain text reply: the answer is the JSON object in it, the rest is reasoning.
            parsed = answer_fields_from_text(content)
            self.observe_reasoning(content[: content.find("{")] if "{" in content else content)
            return parsed
        answer = dict(arguments)
        if "reasoning" not in fields and isinstance(answer.get("reasoning"), str):
            self.observe_reasoning(str(answer.pop("reasoning")))
        return answer

    def _scores(self, answer: dict[str, Any]) -> tuple[dict[str, float | None], dict[str, Any]]:
        report = audit_answer(answer, required_fields=self.spec.answer_format.required_fields, rules=self.rules)
        expected = (self.truth or {}).get("tool_calls")
        tools = tool_accuracy(self.calls, available_tools=self.spec.available_tools, schemas=self.schemas,
                              expected=expected if isinstance(expected, list) else None)
        rubric = reasoning_rubric("\n".join(self.reasoning), answer=answer, observations=self.observations)
        f1: float | None = None
        details: dict[str, Any] = {"audit": report.model_dump(), "tool_accuracy": tools.model_dump(),
                                   "reasoning_quality": rubric.model_dump()}
        if self.truth is not None:
            try:
                result = field_f1(answer, answer_truth(self.truth, self.spec.answer_format.required_fields),
                                  fields=self.spec.answer_format.required_fields or None)
                f1, details["answer_f1"] = result.f1, result.model_dump()
            except ValueError as exc:
                details["answer_f1_error"] = str(exc)
        scores = {"format": report.format_score, "audit": report.audit_score, "tool_accuracy": tools.score,
                  "answer_f1": f1, "reasoning_quality": rubric.score}
        return scores, details

    def _submit(self, arguments: dict[str, Any]) -> StepResult:
        answer = self._answer(arguments)
        scores, details = self._scores(answer)
        reward, unscored = combine(self.spec.reward_weights, scores)
        info = {**details, "scores": scores, "unscored": unscored, "answer": answer}
        return StepResult(observation="answer received", reward=reward, done=True, info=info)

    def tools(self) -> list[dict[str, Any]]:
        """Schemas of the allowed tools plus ``submit_answer`` with the required fields."""
        fields = self.spec.answer_format.required_fields
        props: dict[str, Any] = {f: {"type": "string"} for f in fields}
        if "reasoning" not in props:
            props["reasoning"] = {"type": "string", "description": "How the answer was reached."}
        submit = {"type": "object", "properties": props, "required": fields}
        out = [_tool_schema(name, self.schemas.get(name)) for name in self.spec.available_tools]
        out.append(
            {
                "type": "function",
                "function": {
                    "name": SUBMIT_TOOL,
                    "description": "Submit the final answer.",
                    "parameters": submit,
                },
            }
        )
        return out

    def state(self) -> dict[str, Any]:
        """Skill name and rounds used."""
        return {"skill_name": self.spec.skill_name, "rounds": self.rounds}


def _tool_schema(name: str, parameters: dict[str, Any] | None) -> dict[str, Any]:
    params = parameters or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": name, "description": f"Skill tool {name}.", "parameters": params},
    }

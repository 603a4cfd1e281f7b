"""A skill env defined by YAML: allowed tools, a round budget and an audited answer format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import BaseModel, Field

from services.envs.base import Env
from services.envs.skill_audit import audit_answer, compile_rules
from shared.errors import InvalidInput
from shared.schema import StepResult

__all__ = ["AnswerFormat", "SkillEnv", "SkillSpec", "load_skill"]

SKILLS_DIR = Path(__file__).parent / "skills"
SUBMIT_TOOL = "submit_answer"
ToolHandler = Callable[[dict[str, Any]], str]


class AnswerFormat(BaseModel):
    """Fields the final answer must carry."""

    required_fields: list[str] = Field(default_factory=list)


class SkillSpec(BaseModel):
    """A skill as written in YAML."""

    skill_name: str
    description: str = ""
    available_tools: list[str] = Field(default_factory=list)
    max_rounds: int = Field(8, ge=1)
    answer_format: AnswerFormat = Field(default_factory=AnswerFormat)
    audit_rules: dict[str, str] = Field(default_factory=dict)
    reward_weights: dict[str, float] = Field(default_factory=lambda: {"format": 0.5, "audit": 0.5})


def load_skill(source: str | Path) -> SkillSpec:
    """Load a skill from a YAML path, or by name from the bundled skills folder."""
    path = Path(source)
    if not path.suffix:
        path = SKILLS_DIR / f"{source}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"Cannot read skill {str(source)!r}: {exc}") from exc
    return SkillSpec.model_validate(data)


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


class SkillEnv(Env):
    """Runs one skill: only its tools, at most ``max_rounds`` steps, the answer audited at submit."""

    inline_safe: ClassVar[bool] = True
    description: ClassVar[str] = "Skill env defined by YAML with an audited final answer."

    def __init__(
        self,
        *,
        skill: str | Path | SkillSpec = "order_status",
        handlers: dict[str, ToolHandler] | None = None,
    ) -> None:
        self.spec = skill if isinstance(skill, SkillSpec) else load_skill(skill)
        self.handlers = {**DEFAULT_HANDLERS, **(handlers or {})}
        self.rules = compile_rules(self.spec.audit_rules)
        self.rounds = 0

    def system_prompt(self) -> str:
        """The system prompt built from the skill."""
        s = self.spec
        rules = "; ".join(f"{k} must match {v}" for k, v in s.audit_rules.items()) or "none"
        return (
            f"Skill: {s.skill_name}. {s.description}\nTools: {', '.join(s.available_tools) or 'none'}. "
            f"You have at most {s.max_rounds} rounds.\nFinish by calling {SUBMIT_TOOL} with the fields "
            f"{', '.join(s.answer_format.required_fields)}. Rules: {rules}."
        )

    def reset(self, trajectory: Any = None, *, seed: int | None = None) -> StepResult:
        """Start over; the observation is the skill's system prompt."""
        self.rounds = 0
        prompt = self.system_prompt()
        return StepResult(
            observation=prompt, info={"messages": [{"role": "system", "content": prompt}]}
        )

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Run an allowed tool, or audit the submitted answer; the round budget ends the episode."""
        self.rounds += 1
        if tool_name == SUBMIT_TOOL:
            return self._submit(arguments)
        if self.rounds >= self.spec.max_rounds:
            return StepResult(
                observation="Error: round budget spent.", done=True, info={"truncated": True}
            )
        if tool_name not in self.spec.available_tools or tool_name not in self.handlers:
            allowed = ", ".join(self.spec.available_tools + [SUBMIT_TOOL])
            return StepResult(
                observation=f"Error: tool {tool_name!r} is not allowed. Allowed: {allowed}"
            )
        return StepResult(observation=self.handlers[tool_name](arguments))

    def _submit(self, answer: dict[str, Any]) -> StepResult:
        report = audit_answer(
            answer, required_fields=self.spec.answer_format.required_fields, rules=self.rules
        )
        w = self.spec.reward_weights
        reward = (
            w.get("format", 0.0) * report.format_score + w.get("audit", 0.0) * report.audit_score
        )
        return StepResult(
            observation="answer received",
            reward=reward,
            done=True,
            info={"audit": report.model_dump()},
        )

    def tools(self) -> list[dict[str, Any]]:
        """Schemas of the allowed tools plus ``submit_answer`` with the required fields."""
        fields = self.spec.answer_format.required_fields
        submit = {
            "type": "object",
            "properties": {f: {"type": "string"} for f in fields},
            "required": fields,
        }
        out = [
            _tool_schema(name, DEFAULT_PARAMETERS.get(name)) for name in self.spec.available_tools
        ]
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

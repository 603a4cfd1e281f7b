"""A SCRIPTED policy for rollout job tests, registered as the policy backend ``scripted``.

Fixed replies chosen by the first user message and the turn (labelled scripted:
the real model is too small to produce known tool calls). It is message-mode
only, so jobs using it run in message mode. ``policy.backend.model`` carries
its knobs as ``delay=<seconds>`` (four times as long for a task saying 'slow') and
``record=<file>``: each call appends ``start <task>``, then ``done <task>`` or
``cancelled <task>``, so a test in another process sees what became of its calls.
Also defines ``HangingEnv``, an env whose one tool sleeps longer than any test's tool timeout; the
envs service hosts it as ``hanging`` where a test's settings say so (``HANGING_ENV``).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, ClassVar

from services.envs.base import Env
from services.rollout.adapters import register_policy
from services.rollout.ports import PolicyOutput
from shared.errors import UpstreamError, UpstreamUnavailable
from shared.schema import SamplingParams, StepResult

__all__ = ["HangingEnv", "ScriptedPolicy", "call_text"]


def call_text(name: str, **arguments: Any) -> str:
    """A hermes tool-call block as a model would write it."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def _reply(user: str, turn: int) -> str:
    if "garbage" in user:
        return '<tool_call>\n{"name": "query_status", "arguments": {"item_id": \n</tool_call>'
    if "hang" in user and turn == 0:
        return call_text("wait")
    if turn == 0:
        return "Let me look.\n" + call_text("query_status", item_id="A1")
    return call_text("respond", content="A1 is shipped.")


class ScriptedPolicy:
    """SCRIPTED replies: query_status on turn 0, respond after; 'down' in the task: upstream unavailable."""

    def __init__(self, model: str | None = None, **_: Any) -> None:
        knobs = dict(part.split("=", 1) for part in (model or "").split(",") if "=" in part)
        self.delay_s = float(knobs.get("delay", 0.0))
        self.record = Path(knobs["record"]) if knobs.get("record") else None

    def _note(self, what: str, user: str) -> None:
        if self.record is not None:
            with self.record.open("a") as fh:
                fh.write(f"{what} {user}\n")

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """One scripted assistant turn."""
        user = next(str(m.get("content")) for m in messages if m["role"] == "user")
        self._note("start", user)
        try:
            await asyncio.sleep(self.delay_s * (4 if "slow" in user else 1))
        except asyncio.CancelledError:
            self._note("cancelled", user)
            raise
        self._note("done", user)
        if "down" in user:
            raise UpstreamUnavailable("scripted upstream is down")
        turn = sum(1 for m in messages if m["role"] == "assistant")
        return PolicyOutput(text=_reply(user, turn), finish_reason="stop")

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Token mode is not scripted."""
        raise UpstreamError("the scripted policy is message-mode only")


class HangingEnv(Env):
    """An env whose ``wait`` tool blocks for 3 s (longer than the tests' tool timeout)."""

    inline_safe: ClassVar[bool] = False

    def step(self, tool_name: str, arguments: dict[str, Any]) -> StepResult:
        """Block, then answer."""
        time.sleep(3.0)
        return StepResult(observation="finally")

    def tools(self) -> list[dict[str, Any]]:
        """One tool, ``wait``."""
        return [{"type": "function", "function": {"name": "wait", "parameters": {"type": "object"}}}]


def _broken(**_: Any) -> ScriptedPolicy:
    raise RuntimeError("this policy cannot be built")


register_policy("scripted", ScriptedPolicy)
register_policy("broken", _broken)

#: Settings that make the envs service host ``hanging``.
HANGING_ENV = {"envs_extra": {"hanging": f"{__name__}:HangingEnv"}}

"""Teacher scoring of finished trajectories: on-policy distillation's teacher logprobs.

Each trajectory the student sampled is scored by the job's teacher, a model the
gateway serves, with vLLM's prompt-logprobs API (``GatewayClient.score_tokens``):
the teacher reads the student's own prompt and response token ids and returns
its logprob of every response token. With ``teacher.system_prompt`` the teacher's
prompt is the same conversation under that system message, rendered by the
teacher's chat template through the gateway's ``/tokenize``; the response ids are
always the student's. Teacher logprobs are kept on sampled tokens only (``None``
where ``loss_mask`` is 0, as the student's logprobs are) in
``TokenData.teacher_logprobs``, and ``metadata["teacher"]`` says how it went
(``status`` ok/skipped/failed, the sampled-token count and their mean reverse KL
``log pi_student - log pi_teacher``). A teacher that fails leaves that trajectory
without teacher logprobs (``status: failed`` with the cause); the group goes on.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from shared.clients import GatewayClient, ServiceClient
from shared.errors import TrajforgeError
from shared.schema import TeacherSpec, Trajectory

__all__ = ["TeacherScorer", "teacher_prompt_messages"]

_log = logging.getLogger(__name__)
Guard = Callable[[ServiceClient], AbstractAsyncContextManager[None]]


def teacher_prompt_messages(traj: Trajectory, system_prompt: str) -> list[dict[str, Any]]:
    """The student's prompt (everything before its first reply) under the teacher's system message."""
    prompt: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    for message in traj.messages:
        if message.role == "assistant":
            break
        if message.role not in ("system", "developer"):
            prompt.append(message.to_openai())
    return prompt


def _mean_reverse_kl(student: list[float | None], teacher: list[float | None]) -> float | None:
    pairs = [(s, t) for s, t in zip(student, teacher, strict=True) if s is not None and t is not None]
    return sum(s - t for s, t in pairs) / len(pairs) if pairs else None


class TeacherScorer:
    """Scores trajectories with one teacher through the gateway (see the module docstring)."""

    def __init__(self, spec: TeacherSpec, gateway: GatewayClient, guard: Guard | None = None) -> None:
        self.spec, self.gateway, self._guard = spec, gateway, guard

    def _held(self) -> AbstractAsyncContextManager[None]:
        return self._guard(self.gateway) if self._guard is not None else contextlib.nullcontext()

    async def _prompt_ids(self, traj: Trajectory) -> list[int]:
        assert traj.tokens is not None
        if self.spec.system_prompt is None:
            return list(traj.tokens.prompt_ids)
        tools = [t.model_dump(mode="json", exclude_none=True) for t in traj.tools] or None
        async with self._held():
            return await self.gateway.tokenize_chat(self.spec.model, teacher_prompt_messages(
                traj, self.spec.system_prompt), tools=tools)

    async def score(self, traj: Trajectory) -> None:
        """Store the teacher's logprobs of the trajectory's sampled tokens (or why there are none)."""
        tokens = traj.tokens
        if tokens is None or not tokens.response_ids or not tokens.prompt_ids:
            traj.metadata["teacher"] = {"model": self.spec.model, "status": "skipped",
                                        "error": "no token data to score (a failed or message-level rollout)"}
            return
        try:
            prompt = await self._prompt_ids(traj)
            async with self._held():
                scores = await self.gateway.score_tokens(self.spec.model, [*prompt, *tokens.response_ids],
                                                         timeout_s=self.spec.timeout_s)
        except TrajforgeError as exc:
            _log.warning("teacher %s could not score trajectory %s: %s", self.spec.model, traj.id, exc.message)
            traj.metadata["teacher"] = {"model": self.spec.model, "status": "failed", "error": exc.message}
            return
        mask = tokens.loss_mask or [1] * len(tokens.response_ids)
        tokens.teacher_logprobs = [t if m else None for t, m in zip(scores[len(prompt):], mask, strict=True)]
        student = list(tokens.logprobs) if tokens.logprobs else [None] * len(mask)
        traj.metadata["teacher"] = {
            "model": self.spec.model, "status": "ok", "system_prompt": self.spec.system_prompt is not None,
            "tokens": sum(1 for m in mask if m), "prompt_tokens": len(prompt),
            "reverse_kl": _mean_reverse_kl([s if m else None for s, m in zip(student, mask, strict=True)],
                                           tokens.teacher_logprobs)}

    async def score_all(self, trajs: list[Trajectory]) -> None:
        """Score every trajectory of a group, one after another (the teacher batches across groups)."""
        for traj in trajs:
            await self.score(traj)

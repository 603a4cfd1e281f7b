"""User rollout processors: ``process(RolloutInput) -> RolloutOutput`` from a user package.

A processor is any class with a ``process`` method (plain or ``async``),
named by classpath ``"package.module:Class"`` and built with the spec's
``init_kwargs``. The runtime bounds it (``concurrency`` running at once,
``capacity`` admitted at once, ``timeout_s`` per call); when a processor
raises or times out the output is a fallback whose response starts with
``ROLLOUT_ERROR:``, so one bad rollout is data, not a failed job. Every
output carries ``rollout_metrics`` (latency, tool-call count).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from services.rollout.errors import ProcessorLoadError
from shared.errors import RateLimited
from shared.plugins import CLASSPATH_PATTERN, load_object
from shared.schema import AgentTask

__all__ = [
    "ROLLOUT_ERROR_PREFIX",
    "ProcessorRuntime",
    "ProcessorSpec",
    "RolloutInput",
    "RolloutOutput",
    "load_processor",
]

ROLLOUT_ERROR_PREFIX = "ROLLOUT_ERROR:"


class RolloutInput(AgentTask):
    """One task handed to a processor (plus where to reach the policy, if through the gateway)."""

    base_url: str | None = None
    model: str | None = None
    # The key to send to ``base_url``; kept out of reprs and dumps so it never lands in logs or rows.
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    _http_client: Any = PrivateAttr(default=None)

    @property
    def http_client(self) -> Any:
        """An ``httpx.AsyncClient`` to pass to the OpenAI client, or None to let it open its own.

        Set when the gateway runs in this process and is reached in memory rather than over TCP.
        """
        return self._http_client

    def with_http_client(self, client: Any) -> RolloutInput:
        """This input, carrying ``client`` for in-memory calls to ``base_url``."""
        self._http_client = client
        return self


class RolloutOutput(BaseModel):
    """What a processor returns: the conversation, the final response and its metrics."""

    model_config = ConfigDict(extra="allow")

    id: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    response: str = ""
    status: str = "ok"
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    rollout_metrics: dict[str, float] = Field(default_factory=dict)


class ProcessorSpec(BaseModel):
    """Which processor to load and the runtime bounds it runs under."""

    model_config = ConfigDict(extra="forbid")

    classpath: str = Field(pattern=CLASSPATH_PATTERN, max_length=300)
    init_kwargs: dict[str, Any] = Field(default_factory=dict)
    concurrency: int = Field(default=8, ge=1)
    timeout_s: float = Field(default=600.0, gt=0)
    capacity: int = Field(default=1024, ge=1)


def load_processor(classpath: str, **init_kwargs: Any) -> Any:
    """Import ``package.module:Class`` or ``package.module.Class`` and build it; it must have ``process``."""
    obj = load_object(classpath, what="rollout processor", error=ProcessorLoadError, param="classpath")
    instance = obj(**init_kwargs) if inspect.isclass(obj) else obj
    if not callable(getattr(instance, "process", None)):
        raise ProcessorLoadError(f"{classpath!r} has no process(RolloutInput) method")
    return instance


def _tool_call_count(messages: list[dict[str, Any]]) -> int:
    return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")


def _fallback(inp: RolloutInput, exc: BaseException) -> RolloutOutput:
    reason = "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
    detail = f"{reason}: {exc}" if str(exc) else reason
    return RolloutOutput(id=inp.id, messages=list(inp.messages), status="error", error=detail,
                         response=f"{ROLLOUT_ERROR_PREFIX} {detail}")


class ProcessorRuntime:
    """Runs one loaded processor under its spec's concurrency, capacity and timeout."""

    def __init__(self, spec: ProcessorSpec, processor: Any | None = None) -> None:
        self.spec = spec
        self.processor = processor or load_processor(spec.classpath, **spec.init_kwargs)
        self._running = asyncio.Semaphore(spec.concurrency)
        self._admitted = 0

    async def process(self, inp: RolloutInput) -> RolloutOutput:
        """Run one input; raises ``RateLimited`` when the runtime is at capacity."""
        if self._admitted >= self.spec.capacity:
            raise RateLimited(f"processor at capacity ({self.spec.capacity} in flight); retry later",
                              retry_after_s=1.0)
        self._admitted += 1
        try:
            async with self._running:
                return await self._timed(inp)
        finally:
            self._admitted -= 1

    async def process_many(self, inputs: Sequence[RolloutInput]) -> list[RolloutOutput]:
        """Run many inputs, admitting at most ``capacity`` at once; order is kept."""
        window = asyncio.Semaphore(self.spec.capacity)

        async def one(inp: RolloutInput) -> RolloutOutput:
            """Admit one input inside the capacity window."""
            async with window:
                return await self.process(inp)

        return list(await asyncio.gather(*(one(i) for i in inputs)))

    async def _timed(self, inp: RolloutInput) -> RolloutOutput:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.spec.timeout_s):
                out = await self._call(inp)
        except Exception as exc:  # noqa: BLE001 - user code: any failure becomes a ROLLOUT_ERROR record
            out = _fallback(inp, exc)
        out.id = out.id or inp.id
        out.rollout_metrics = {**out.rollout_metrics, "latency_s": time.perf_counter() - started,
                               "tool_call_count": float(_tool_call_count(out.messages))}
        return out

    async def _call(self, inp: RolloutInput) -> RolloutOutput:
        fn = self.processor.process
        raw = await fn(inp) if inspect.iscoroutinefunction(fn) else await asyncio.to_thread(fn, inp)
        return raw if isinstance(raw, RolloutOutput) else RolloutOutput.model_validate(raw)

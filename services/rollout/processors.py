"""In-process rollout processors: ``process(RolloutInput) -> RolloutOutput`` from an allow-listed module.

The contracts are ``shared.schema.functions``'s (the ones uploaded function
components speak too; those run in the functions service's workers). A
processor is any class with a ``process`` method (plain or ``async``),
named by classpath ``"package.module:Class"`` or the reference's dotted
``"package.module.Class"`` (``shared.plugins``) and built with the spec's
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

from pydantic import BaseModel, ConfigDict, Field

from services.rollout.errors import ProcessorLoadError
from shared.errors import RateLimited
from shared.plugins import CLASSPATH_PATTERN, load_object
from shared.schema.functions import (
    ROLLOUT_ERROR_PREFIX,
    ModelResource,
    RolloutInput,
    RolloutOutput,
    rollout_error_output,
)

__all__ = [
    "ROLLOUT_ERROR_PREFIX",
    "ModelResource",
    "ProcessorRuntime",
    "ProcessorSpec",
    "RolloutInput",
    "RolloutOutput",
    "load_processor",
]

class ProcessorSpec(BaseModel):
    """Which processor to load and the runtime bounds it runs under."""

    model_config = ConfigDict(extra="forbid")

    classpath: str = Field(pattern=CLASSPATH_PATTERN, max_length=300)
    init_kwargs: dict[str, Any] = Field(default_factory=dict)
    concurrency: int = Field(default=8, ge=1)
    timeout_s: float = Field(default=600.0, gt=0)
    capacity: int = Field(default=1024, ge=1)


def load_processor(classpath: str, *, allowed_modules: Sequence[str] | None = None, **init_kwargs: Any) -> Any:
    """Import ``package.module:Class`` or ``package.module.Class`` and build it; it must have ``process``.

    With ``allowed_modules`` the classpath must lie under one of those module prefixes (checked
    before anything is imported).
    """
    obj = load_object(classpath, allowed=allowed_modules, what="rollout processor", error=ProcessorLoadError,
                      param="classpath", setting="TRAJFORGE_ROLLOUT_PROCESSOR_MODULES")
    instance = obj(**init_kwargs) if inspect.isclass(obj) else obj
    if not callable(getattr(instance, "process", None)):
        raise ProcessorLoadError(f"{classpath!r} has no process(RolloutInput) method")
    return instance


def _tool_call_count(messages: list[dict[str, Any]]) -> int:
    return sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")


def _fallback(inp: RolloutInput, exc: BaseException) -> RolloutOutput:
    reason = "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
    return rollout_error_output(inp, f"{reason}: {exc}" if str(exc) else reason)


class ProcessorRuntime:
    """Runs one loaded processor under its spec's concurrency, capacity and timeout."""

    def __init__(self, spec: ProcessorSpec, processor: Any | None = None, *,
                 allowed_modules: Sequence[str] | None = None) -> None:
        self.spec = spec
        self.processor = processor or load_processor(spec.classpath, allowed_modules=allowed_modules,
                                                     **spec.init_kwargs)
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
        agent = out.agent_output
        agent.rollout_metrics = {**agent.rollout_metrics, "latency_s": time.perf_counter() - started,
                                 "tool_call_count": float(_tool_call_count(agent.messages))}
        return out

    async def _call(self, inp: RolloutInput) -> RolloutOutput:
        fn = self.processor.process
        raw = await fn(inp) if inspect.iscoroutinefunction(fn) else await asyncio.to_thread(fn, inp)
        return raw if isinstance(raw, RolloutOutput) else RolloutOutput.model_validate(raw)

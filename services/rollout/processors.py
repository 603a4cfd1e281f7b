"""User rollout processors: ``process(RolloutInput) -> RolloutOutput`` from a user package.

A processor is any class with a ``process`` method (plain or ``async``),
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

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from services.rollout.errors import ProcessorLoadError
from shared.errors import RateLimited
from shared.plugins import CLASSPATH_PATTERN, load_object
from shared.schema import AgentTask

__all__ = [
    "ROLLOUT_ERROR_PREFIX",
    "ModelResource",
    "ProcessorRuntime",
    "ProcessorSpec",
    "RolloutInput",
    "RolloutOutput",
    "load_processor",
]

ROLLOUT_ERROR_PREFIX = "ROLLOUT_ERROR:"


class ModelResource(BaseModel):
    """Where the policy is: the reference's ``input.model_resource`` (model name, base URL, key)."""

    model_name: str | None = None
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)


class RolloutInput(AgentTask):
    """One task handed to a processor: the conversation, where to reach the policy, the job's budgets.

    ``sampling_params`` is the job's sampling as OpenAI request fields (``temperature``,
    ``max_tokens``, ...) plus ``timeout`` (seconds for the whole member); ``limits`` is the
    job's ``RolloutLimits``. Both are what the processor should sample and stop with.
    """

    base_url: str | None = None
    model: str | None = None
    # The key to send to ``base_url``; kept out of reprs and dumps so it never lands in logs or rows.
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    sampling_params: dict[str, Any] = Field(default_factory=dict)
    limits: dict[str, Any] = Field(default_factory=dict)
    _http_client: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _reference_fields(cls, data: Any) -> Any:
        """Accept the reference's ``model_resource`` and ``rollout_extra`` as constructor fields."""
        if not isinstance(data, dict) or not ({"model_resource", "rollout_extra"} & data.keys()):
            return data
        data = dict(data)
        resource = data.pop("model_resource", None)
        if resource is not None:
            fields = resource.model_dump() if isinstance(resource, BaseModel) else dict(resource)
            data.setdefault("model", fields.get("model_name"))
            data.setdefault("base_url", fields.get("base_url"))
            data.setdefault("api_key", fields.get("api_key"))
        extra = data.pop("rollout_extra", None)
        if extra is not None:
            data["metadata"] = {**dict(extra), **dict(data.get("metadata") or {})}
        return data

    @property
    def model_resource(self) -> ModelResource:
        """The policy endpoint as the reference's processors read it."""
        return ModelResource(model_name=self.model, base_url=self.base_url, api_key=self.api_key)

    @property
    def rollout_extra(self) -> dict[str, Any]:
        """The task's metadata, passed through to the output (the reference's name)."""
        return self.metadata

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
    """What a processor returns: the conversation, the final response and its metrics.

    The reference's shape is accepted too: ``agent_output`` (``messages``, ``rollout_extra``,
    ``rollout_metrics``) with ``status`` ``SUCCESS``/``FAILED`` (or a ``TaskStatus``-like enum).
    """

    model_config = ConfigDict(extra="allow")

    id: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    response: str = ""
    status: str = "ok"
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    rollout_metrics: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _agent_output(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "agent_output" not in data:
            return data
        data = dict(data)
        agent = data.pop("agent_output")
        agent = agent.model_dump() if isinstance(agent, BaseModel) else dict(agent or {})
        status = getattr(data.get("status"), "value", data.get("status"))
        failed = str(status or "").upper() in ("FAILED", "FAIL", "ERROR")
        messages = list(agent.get("messages") or [])
        last = str((messages[-1] if messages else {}).get("content") or "")
        return {**data, "messages": messages, "metadata": dict(agent.get("rollout_extra") or {}),
                "rollout_metrics": dict(agent.get("rollout_metrics") or {}), "response": last,
                "status": "error" if failed else "ok"}


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
    detail = f"{reason}: {exc}" if str(exc) else reason
    return RolloutOutput(id=inp.id, messages=list(inp.messages), status="error", error=detail,
                         response=f"{ROLLOUT_ERROR_PREFIX} {detail}")


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
        out.id = out.id or inp.id
        out.rollout_metrics = {**out.rollout_metrics, "latency_s": time.perf_counter() - started,
                               "tool_call_count": float(_tool_call_count(out.messages))}
        return out

    async def _call(self, inp: RolloutInput) -> RolloutOutput:
        fn = self.processor.process
        raw = await fn(inp) if inspect.iscoroutinefunction(fn) else await asyncio.to_thread(fn, inp)
        return raw if isinstance(raw, RolloutOutput) else RolloutOutput.model_validate(raw)

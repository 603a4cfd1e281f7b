"""MicroBatcher: a token-mode ``Policy`` over a backend that batches per call.

Requests are queued as trajectories reach their next turn; whenever the
backend is free, everything waiting (up to ``max_batch_size``, same sampling
parameters) goes out as one call. There is no turn barrier: a member that
finishes is never held back for its siblings, and a batch never waits for
stragglers beyond the optional ``max_wait_s`` collection window.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from services.rollout.ports import BatchPolicy, PolicyOutput
from shared.errors import InvalidInput
from shared.schema import SamplingParams

__all__ = ["MicroBatcher"]

_Item = tuple[list[int], SamplingParams, "asyncio.Future[PolicyOutput]"]


class MicroBatcher:
    """Adapts a ``BatchPolicy`` to the per-request ``Policy`` port (token mode only)."""

    def __init__(self, backend: BatchPolicy, *, max_batch_size: int = 32, max_wait_s: float = 0.0,
                 max_inflight_batches: int = 1) -> None:
        if max_batch_size < 1 or max_inflight_batches < 1:
            raise InvalidInput("max_batch_size and max_inflight_batches must be >= 1")
        self.backend, self.max_batch_size, self.max_wait_s = backend, max_batch_size, max_wait_s
        self._queue: deque[_Item] = deque()
        self._slots = asyncio.Semaphore(max_inflight_batches)
        self._drainer: asyncio.Task[None] | None = None
        self.batch_sizes: list[int] = []

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                   sampling: SamplingParams, extra_body: dict[str, Any] | None = None) -> PolicyOutput:
        """Not supported: batching backends take token ids."""
        raise InvalidInput("MicroBatcher serves token mode only; use mode='tokens'")

    async def generate(self, prompt_ids: list[int], *, sampling: SamplingParams) -> PolicyOutput:
        """Queue one request and wait for its own result (cancellable)."""
        fut: asyncio.Future[PolicyOutput] = asyncio.get_running_loop().create_future()
        self._queue.append((prompt_ids, sampling, fut))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await fut

    async def _drain(self) -> None:
        while self._queue:
            await self._slots.acquire()
            if self.max_wait_s:
                await asyncio.sleep(self.max_wait_s)
            batch = self._take()
            if not batch:
                self._slots.release()
                continue
            task = asyncio.create_task(self._send(batch))
            task.add_done_callback(lambda _: self._slots.release())
            await asyncio.sleep(0)  # let the batch start before collecting the next one

    def _take(self) -> list[_Item]:
        """Pop live requests that share the first one's sampling parameters."""
        batch: list[_Item] = []
        skipped: list[_Item] = []
        while self._queue and len(batch) < self.max_batch_size:
            item = self._queue.popleft()
            if item[2].done():  # its caller was cancelled while it waited
                continue
            if batch and item[1] != batch[0][1]:
                skipped.append(item)
                continue
            batch.append(item)
        self._queue.extendleft(reversed(skipped))
        return batch

    async def _send(self, batch: list[_Item]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            outs = await self.backend.generate_batch([ids for ids, _, _ in batch], sampling=batch[0][1])
        except Exception as exc:  # noqa: BLE001 - every waiting caller gets the backend's error
            for _, _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, _, fut), out in zip(batch, outs, strict=True):
            if not fut.done():
                fut.set_result(out)

"""PrioritySlots: a concurrency cap whose waiters are served by priority, then arrival.

The engine computes each request's priority with a scheduling rule (see
``services.rollout.schedule``); this class only orders the waiters.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

__all__ = ["PrioritySlots"]


class PrioritySlots:
    """At most ``capacity`` holders; lower ``priority`` values are served first.

    ``on_idle`` is called when a released slot finds no waiter (the engine relaunches stragglers then).
    """

    def __init__(self, capacity: int, *, on_idle: Callable[[], None] | None = None) -> None:
        self.capacity = capacity
        self.on_idle = on_idle
        self._free = capacity
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    @property
    def in_use(self) -> int:
        """Slots currently held."""
        return self.capacity - self._free

    @property
    def idle(self) -> int:
        """Slots free with nobody waiting for them (a slot is only ever free when no one waits)."""
        return self._free

    async def acquire(self, priority: float = 0) -> None:
        """Wait for a slot; cancellation while waiting leaves no slot behind."""
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._seq), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted just as we were cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        """Hand the slot to the best live waiter, or free it."""
        while self._waiters:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
                return
        self._free += 1
        if self.on_idle is not None:
            self.on_idle()

    @asynccontextmanager
    async def slot(self, priority: float = 0) -> AsyncIterator[None]:
        """``async with slots.slot(priority):`` holds one slot for the block."""
        await self.acquire(priority)
        try:
            yield
        finally:
            self.release()

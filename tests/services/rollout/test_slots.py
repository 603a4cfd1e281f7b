"""PrioritySlots: cap, priority order, cancellation safety."""

from __future__ import annotations

import asyncio

from services.rollout.slots import PrioritySlots


async def test_waiters_are_served_by_priority_then_arrival() -> None:
    slots = PrioritySlots(1)
    order: list[str] = []
    await slots.acquire()

    async def wait(name: str, priority: int) -> None:
        async with slots.slot(priority):
            order.append(name)

    tasks = [asyncio.create_task(wait(n, p)) for n, p in [("a", 3), ("b", 1), ("c", 1), ("d", 0)]]
    await asyncio.sleep(0.01)
    slots.release()
    await asyncio.gather(*tasks)
    assert order == ["d", "b", "c", "a"] and slots.in_use == 0


async def test_cancelled_waiter_leaves_no_slot_behind() -> None:
    slots = PrioritySlots(2)
    await slots.acquire()
    await slots.acquire()
    waiter = asyncio.create_task(slots.acquire(0))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    slots.release()
    slots.release()
    assert slots.in_use == 0
    await asyncio.wait_for(slots.acquire(), 1)
    await asyncio.wait_for(slots.acquire(), 1)
    assert slots.in_use == 2


async def test_slot_granted_then_cancelled_is_passed_on() -> None:
    slots = PrioritySlots(1)
    await slots.acquire()
    first = asyncio.create_task(slots.acquire(0))
    second = asyncio.create_task(slots.acquire(1))
    await asyncio.sleep(0.01)
    slots.release()  # grants `first` ...
    first.cancel()  # ... which is cancelled before it resumes
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.wait_for(second, 1)
    assert slots.in_use == 1

"""wait_event: set, timed out, and a cancel that lands as the event is set (lost by wait_for on 3.11)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from shared.aio import wait_event


async def test_true_when_set_false_on_timeout() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_event(event, 5) is True
    assert await wait_event(event, 0) is True  # already set: no wait at all


async def _loop_until_cancelled(event: asyncio.Event, wait: str) -> None:
    # A worker loop of the shape services use: wait for a wake-up or a tick, do a tick, again.
    while True:
        if wait == "wait_event":
            await wait_event(event, 10)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), 10)
        event.clear()
        await asyncio.sleep(0)


async def _cancel_as_the_event_is_set(wait: str) -> bool:
    """True when the loop task ended after being cancelled in the same turn as its event was set."""
    event = asyncio.Event()
    task = asyncio.create_task(_loop_until_cancelled(event, wait))
    await asyncio.sleep(0)  # the loop is waiting now
    event.set()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=0.2)
    if not done:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return bool(done)


async def test_a_cancel_landing_as_the_event_is_set_stops_the_loop() -> None:
    for _ in range(20):
        assert await _cancel_as_the_event_is_set("wait_event")


async def test_wait_for_loses_that_cancel_on_this_python() -> None:
    # Why the helper exists: the same loop over wait_for runs on after the cancel (Python 3.11).
    # Newer versions reimplemented wait_for on asyncio.timeout, where the cancel gets through.
    import sys

    if sys.version_info >= (3, 12):
        pytest.skip("wait_for keeps the cancel from Python 3.12 on")
    assert not await _cancel_as_the_event_is_set("wait_for")

"""Small asyncio helpers shared by services.

On Python 3.11, ``asyncio.wait_for`` can lose a cancellation: when the awaited
event is set in the same loop turn as the waiting task is cancelled, wait_for
returns normally and the cancel is gone. A loop that waits that way and is
stopped by ``task.cancel()`` then runs on, and whoever awaits the task hangs.
``asyncio.timeout`` counts cancellations on the task itself and lets an outside
cancel through, so the waits here use it (it also starts no extra task).
"""

from __future__ import annotations

import asyncio

__all__ = ["wait_event"]


async def wait_event(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Wait until ``event`` is set or ``timeout_s`` passes: True if it was set.

    A cancellation of the calling task always propagates, whenever it lands.
    """
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True

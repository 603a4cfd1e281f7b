"""ComponentPool's lifecycle without worker processes: closing ends the scaler, whatever becomes of its cancel."""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.functions.pool import ComponentPool
from shared.schema.functions import FunctionComponentRuntime
from shared.settings import Settings


def _pool(tmp_path: Path) -> ComponentPool:
    return ComponentPool(key="k", kind="rollout", name="n", classpath="x.Y", runtime=FunctionComponentRuntime(),
                         pythonpath="", scratch_root=tmp_path, cgroups=None, group_parent="g",
                         settings=Settings(functions_scale_interval_s=0.01))


async def test_close_ends_a_scaler_whose_cancel_was_lost_and_starts_nothing_after(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    ticking = asyncio.Event()

    async def scale_once() -> None:
        # What asyncio.wait_for can do on Python 3.11 when a cancel lands as its wait completes: the
        # cancel is lost and the loop goes on. Here a tick swallows it and goes on to scale, as a hot
        # pool's tick would; later ticks wait as long as a slow one can.
        ticking.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pool._spawn("memory threshold", 0.0)

    pool.scale_once = scale_once  # type: ignore[method-assign]
    pool._scaler = asyncio.create_task(pool._scale_loop())
    await ticking.wait()
    await asyncio.wait_for(pool.close(), 2.0)  # before the fix: the scaler ticked on and close never returned
    assert pool._scaler.done()
    assert not pool._spawns and pool.starting == 0 and not pool.instances


async def test_a_closed_pool_spawns_no_instance(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    await pool.close()
    pool._spawn("replace: below min_capacity", 0.0)
    assert not pool._spawns and pool.starting == 0

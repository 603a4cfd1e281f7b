"""The PII step of a job pipeline in worker processes (``pii_processes`` > 1).

A pool costs a few seconds to start (each worker builds its analyzer), so one
pool per step configuration lives for the life of the process and serves every
batch; it is shut down at exit.
"""

from __future__ import annotations

import atexit
import pickle
from collections.abc import Sequence

from services.cleaning.base import Step
from services.cleaning.runner import PII_STEP, PooledStep

__all__ = ["pooled_pii"]

_POOLS: dict[tuple[bytes, int], object] = {}


def _close_all() -> None:
    for pool in _POOLS.values():
        pool.close()  # type: ignore[attr-defined]
    _POOLS.clear()


def _pool_for(step: Step, processes: int) -> object:
    from services.cleaning.pii_pool import PIIWorkerPool

    key = (pickle.dumps(step), processes)
    pool = _POOLS.get(key)
    if pool is None:
        if not _POOLS:
            atexit.register(_close_all)
        pool = _POOLS[key] = PIIWorkerPool(step, processes=processes)  # type: ignore[arg-type]
    return pool


def pooled_pii(steps: Sequence[Step], *, processes: int) -> list[Step]:
    """The steps, with the PII step run through a process pool when ``processes`` > 1."""
    if processes <= 1:
        return list(steps)
    return [PooledStep(PII_STEP, _pool_for(s, processes)) if s.name == PII_STEP else s for s in steps]

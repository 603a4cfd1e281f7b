"""Run PIIPresidioFilter in worker processes: the analyzer is built once per process.

The filter pickles without its analyzer; each worker's initializer rebuilds it
(about 3 s), then batches of rows go through in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext
from types import TracebackType

from services.cleaning.base import Row
from services.cleaning.pii import PIIPresidioFilter, PIIStats
from shared.errors import ServiceUnavailable
from shared.iterutil import batched

__all__ = ["PIIWorkerPool", "scrub_batch"]

_worker_filter: PIIPresidioFilter | None = None


def _init_worker(step: PIIPresidioFilter) -> None:
    global _worker_filter
    _worker_filter = step
    _ = step.analyzer  # build now, so the first batch pays nothing extra


def scrub_batch(rows: list[Row]) -> tuple[list[Row], PIIStats]:
    """Rewrite one batch with this process's filter; returns the rows and the batch's stats."""
    if _worker_filter is None:
        raise ServiceUnavailable("PII worker used before its initializer ran")
    out, _ = _worker_filter.process(rows)
    return out, _worker_filter.stats


def _merge(total: PIIStats, part: PIIStats) -> None:
    total.rows += part.rows
    total.messages_scanned += part.messages_scanned
    total.chars_scanned += part.chars_scanned
    total.messages_capped += part.messages_capped
    total.seconds += part.seconds
    for entity, n in part.hits.items():
        total.hits[entity] = total.hits.get(entity, 0) + n


class PIIWorkerPool:
    """A process pool running one PII filter; use as a context manager."""

    def __init__(
        self,
        step: PIIPresidioFilter,
        *,
        processes: int = 2,
        batch_size: int = 64,
        mp_context: BaseContext | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.stats = PIIStats()
        self._executor = ProcessPoolExecutor(
            processes, mp_context=mp_context, initializer=_init_worker, initargs=(step,)
        )

    def map(self, rows: Iterable[Row]) -> Iterator[Row]:
        """Rewritten rows in input order; ``stats`` sums the workers' figures."""
        for out, stats in self._executor.map(scrub_batch, batched(rows, self.batch_size)):
            _merge(self.stats, stats)
            yield from out

    def close(self) -> None:
        """Stop the workers."""
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> PIIWorkerPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

"""Math equivalence with Math-Verify, run in worker processes.

Math-Verify's timeouts use SIGALRM, which only works in a main thread, so each
check runs in a small process pool whose workers call it from their main thread.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import threading

__all__ = ["math_equal", "shutdown_pool"]

_POOL: cf.ProcessPoolExecutor | None = None
_LOCK = threading.Lock()


def _verify(gold: str, pred: str, timeout_s: float) -> bool:
    from math_verify import parse, verify

    seconds = max(1, int(timeout_s))
    gold_parsed = parse(gold if "\\boxed" in gold or "$" in gold else f"${gold}$", parsing_timeout=seconds)
    pred_parsed = parse(pred if "\\boxed" in pred or "$" in pred else f"${pred}$", parsing_timeout=seconds)
    # Argument order matters: Math-Verify is asymmetric on purpose (gold first).
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=seconds))


def _pool() -> cf.ProcessPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return _POOL


def math_equal(gold: str, pred: str, *, timeout_s: float = 5.0) -> bool:
    """True when Math-Verify judges ``pred`` equal to ``gold``; False on error or timeout."""
    try:
        return _pool().submit(_verify, gold, pred, timeout_s).result(timeout=timeout_s + 30)
    except BaseException:  # noqa: BLE001 - Math-Verify's timeout derives from BaseException
        return False


def shutdown_pool() -> None:
    """Stop the worker processes (tests and service shutdown)."""
    global _POOL
    with _LOCK:
        if _POOL is not None:
            _POOL.shutdown(wait=True, cancel_futures=True)
            _POOL = None

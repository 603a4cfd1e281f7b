"""Trace files: one JSON file per finished trajectory, never overwritten.

Names are ``{step}-{ok|fail}-{id}-{member}.json`` (step zero-padded to six
digits, id sanitised); the member index keeps the N samples of a group apart,
and exclusive creation guarantees an existing file is never replaced.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared.schema import Trajectory

__all__ = ["TraceWriter", "trace_name"]

_log = logging.getLogger(__name__)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_TOKEN_FIELDS = {"tokens"}


def _safe_id(raw: str) -> str:
    return _UNSAFE.sub("_", raw)[:64] or "traj"


def trace_name(*, step: int, ok: bool, traj_id: str, member: int, attempt: int = 0) -> str:
    """File name of one trace; ``attempt`` > 0 only when the plain name is taken."""
    suffix = f"-dup{attempt}" if attempt else ""
    return f"{step:06d}-{'ok' if ok else 'fail'}-{_safe_id(traj_id)}-{member}{suffix}.json"


class TraceWriter:
    """Writes trajectory traces to a folder; callbacks choose what and how to label."""

    def __init__(
        self,
        trace_dir: str | Path,
        *,
        trace_callback: Callable[[Trajectory], bool] | None = None,
        success_callback: Callable[[Trajectory], bool] | None = None,
    ) -> None:
        self.trace_dir = Path(trace_dir)
        self.trace_dir.mkdir(parents=True, exist_ok=True)
        self._trace_callback = trace_callback
        self._success_callback = success_callback

    def write(self, traj: Trajectory, *, step: int = 0) -> Path | None:
        """Write one trace; returns its path, or ``None`` when skipped or failed."""
        if not self._wanted(traj):
            return None
        ok = self._success(traj)
        body = json.dumps(self._record(traj, ok), ensure_ascii=False, indent=2)
        try:
            return self._create(body, step=step, ok=ok, traj=traj)
        except OSError as exc:  # a trace is a by-product: never fail the rollout for it
            _log.warning("trace for %s not written: %s", traj.id, exc)
            return None

    def _wanted(self, traj: Trajectory) -> bool:
        if self._trace_callback is None:
            return True
        try:
            return bool(self._trace_callback(traj))
        except Exception:  # noqa: BLE001 - a buggy user callback means "skip", not a failed rollout
            return False

    def _success(self, traj: Trajectory) -> bool:
        if self._success_callback is None:
            return traj.stop_reason == "stop"
        try:
            return bool(self._success_callback(traj))
        except Exception:  # noqa: BLE001 - a buggy user callback labels the trace "fail"
            return False

    def _create(self, body: str, *, step: int, ok: bool, traj: Trajectory) -> Path:
        for attempt in range(10_000):
            task_id = str(traj.metadata.get("prompt_id") or traj.id)
            name = trace_name(step=step, ok=ok, traj_id=task_id, member=traj.sample_index,
                              attempt=attempt)
            path = self.trace_dir / name
            try:
                with path.open("x", encoding="utf-8") as fh:
                    fh.write(body)
                return path
            except FileExistsError:
                continue
        raise OSError(f"no free trace name for {traj.id}")

    @staticmethod
    def _record(traj: Trajectory, ok: bool) -> dict[str, Any]:
        row = traj.to_row()
        for field in _TOKEN_FIELDS:
            row.pop(field, None)
        return {"trajectory": row, "ground_truth": traj.metadata.get("ground_truth", ""),
                "stop_reason": traj.stop_reason, "truncated": traj.truncated,
                "turns": traj.turns, "error": traj.metadata.get("error"), "success": ok}

"""FusedSteps: the default pipeline's steps run as one pass over the rows.

Step by step, every step walks the whole batch, and each recomputes what it needs from
every message (its text, whether the row is an agent row). Fused, each row goes through
every step while it is hot, stops at its first drop, and the message texts and the agent
flag are computed once per row and shared by the text checks (DeadLoopFilter,
RefuseFilter, TokenSoupFilter). The per-row logic is the steps' own, so verdicts,
reasons and evidence are identical to running the steps one after another; per-step
stats are still reported one entry per step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from services.cleaning.base import Row, Step, StepOutput
from services.cleaning.deadloop import DeadLoopFilter
from services.cleaning.hard import HardFilter
from services.cleaning.normalizer import MessageNormalizer
from services.cleaning.preprocessor import StepStats
from services.cleaning.refuse import RefuseFilter
from services.cleaning.sanity import MessageSanityFilter
from services.cleaning.soup import TokenSoupFilter
from services.cleaning.text import is_agent_row, message_text

__all__ = ["FUSABLE", "FusedSteps", "fuse"]

#: Step classes whose per-row logic the fused pass can run.
FUSABLE: tuple[type[Step], ...] = (MessageNormalizer, MessageSanityFilter, HardFilter, DeadLoopFilter, RefuseFilter,
                                   TokenSoupFilter)


class _Scan:
    """What the text checks share about one row's messages, computed on first use."""

    __slots__ = ("_agent", "_texts", "messages")

    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages
        self._texts: list[str] | None = None
        self._agent: bool | None = None

    @property
    def texts(self) -> list[str]:
        if self._texts is None:
            self._texts = [message_text(m.get("content")) if isinstance(m, dict) else "" for m in self.messages]
        return self._texts

    @property
    def agent(self) -> bool:
        if self._agent is None:
            self._agent = is_agent_row(self.messages)
        return self._agent


# One row through one step: the row to go on with, or the dropped copy (and False).
RowFn = Callable[[Row, list[_Scan]], tuple[Row, bool]]


def _row_fn(step: Step) -> RowFn:
    """The per-row function of a fusable step (the step's own logic, row by row)."""
    if isinstance(step, MessageNormalizer):
        def normalize(row: Row, scan: list[_Scan]) -> tuple[Row, bool]:
            scan.clear()  # messages change: shared values are recomputed
            return step.normalize_row(row), True
        return normalize
    if isinstance(step, MessageSanityFilter):
        def sanity(row: Row, scan: list[_Scan]) -> tuple[Row, bool]:
            result = step.check(row.get("messages"), tools=row.get("tools"))
            if isinstance(result, str):
                return step.drop(row, result, step.evidence(row.get("messages"), result, tools=row.get("tools"))), False
            scan.clear()
            return {**row, "messages": result}, True
        return sanity
    if isinstance(step, HardFilter):
        def hard(row: Row, scan: list[_Scan]) -> tuple[Row, bool]:
            reason = step.reason(row.get("messages"), has_tools=bool(row.get("tools")))
            if reason is None:
                return row, True
            return step.drop(row, reason, step.evidence(row.get("messages"), reason)), False
        return hard
    if isinstance(step, (DeadLoopFilter, RefuseFilter, TokenSoupFilter)):
        reason = {DeadLoopFilter: "dead_loop", RefuseFilter: "refusal", TokenSoupFilter: "token_soup"}[type(step)]

        def text_check(row: Row, scan: list[_Scan]) -> tuple[Row, bool]:
            msgs = row.get("messages")
            if not isinstance(msgs, list):
                return row, True
            if not scan or scan[0].messages is not msgs:
                scan[:] = [_Scan(msgs)]
            s = scan[0]
            found: dict[str, Any] | None
            if isinstance(step, DeadLoopFilter):
                found = step.find_stuck(msgs, agent=s.agent, texts=s.texts)
            elif isinstance(step, RefuseFilter):
                found = step.find_refusal(msgs, agent=s.agent, texts=s.texts, tools=row.get("tools"))
            else:
                found = step.find_soup(msgs, texts=s.texts)
            return (row, True) if found is None else (step.drop(row, reason, found), False)
        return text_check
    raise TypeError(f"{step.name} cannot be fused")


def _no_clock() -> float:
    return 0.0


class FusedSteps(Step):
    """Run consecutive fusable steps as one pass over the rows (identical verdicts, one stat per step)."""

    name = "FusedSteps"

    def __init__(self, steps: Sequence[Step], *, timed: bool = True) -> None:
        self.steps = list(steps)
        self.timed = timed  # per-step seconds cost two clock reads per row and step
        self._fns = [_row_fn(s) for s in self.steps]

    def process(self, rows: list[Row]) -> StepOutput:
        """Kept rows in input order; dropped rows in the order of the steps that dropped them."""
        kept, dropped, _ = self.process_with_stats(rows)
        return kept, dropped

    def process_with_stats(self, rows: list[Row]) -> tuple[list[Row], list[Row], list[StepStats]]:
        """Kept and dropped rows plus the stats each fused step would have reported on its own."""
        n = len(self.steps)
        seen = [0] * n
        seconds = [0.0] * n
        dropped_by: list[list[Row]] = [[] for _ in range(n)]
        kept: list[Row] = []
        clock = time.perf_counter if self.timed else _no_clock
        fns = self._fns
        for row in rows:
            scan: list[_Scan] = []
            for k in range(n):
                seen[k] += 1
                started = clock()
                row, ok = fns[k](row, scan)
                seconds[k] += clock() - started
                if not ok:
                    dropped_by[k].append(row)
                    break
            else:
                kept.append(row)
        stats = []
        for k, step in enumerate(self.steps):
            reasons: dict[str, int] = {}
            for r in dropped_by[k]:
                reasons[str(r.get("drop_reason"))] = reasons.get(str(r.get("drop_reason")), 0) + 1
            stats.append(StepStats(step=step.name, rows_in=seen[k], rows_out=seen[k] - len(dropped_by[k]),
                                   dropped=reasons, seconds=round(seconds[k], 6)))
        return kept, [r for group in dropped_by for r in group], stats


def fuse(steps: Sequence[Step]) -> list[Step]:
    """``steps`` with every run of two or more consecutive fusable steps replaced by one FusedSteps."""
    out: list[Step] = []
    run: list[Step] = []
    for step in [*steps, None]:
        if step is not None and type(step) in FUSABLE:
            run.append(step)
            continue
        if len(run) >= 2:
            out.append(FusedSteps(run))
        else:
            out += run
        run = []
        if step is not None:
            out.append(step)
    return out

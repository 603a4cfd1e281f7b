"""Trace files: naming, callbacks, never overwriting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.rollout.engine import AsyncRolloutEngine
from services.rollout.traces import TraceWriter, trace_name
from shared.schema import Trajectory
from tests.services.rollout.support import ScriptedPolicy


def traj(member: int, reason: str = "stop") -> Trajectory:
    return Trajectory(id=f"task-{member}", sample_index=member, stop_reason=reason,
                      messages=[{"role": "user", "content": "q"}], metadata={"prompt_id": "task"})


def test_name_has_step_status_id_and_member() -> None:
    assert trace_name(step=3, ok=True, traj_id="a b/c", member=2) == "000003-ok-a_b_c-2.json"
    assert trace_name(step=3, ok=False, traj_id="x", member=0, attempt=1) == "000003-fail-x-0-dup1.json"


def test_group_members_get_separate_files_and_nothing_is_overwritten(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path)
    first = [writer.write(traj(m)) for m in range(3)]
    again = writer.write(traj(0, reason="length"))
    assert [p.name for p in first if p] == ["000000-ok-task-0.json", "000000-ok-task-1.json",
                                           "000000-ok-task-2.json"]
    assert again is not None and again.name == "000000-fail-task-0.json"
    third = writer.write(traj(0))
    assert third is not None and third.name == "000000-ok-task-0-dup1.json"
    assert json.loads(first[0].read_text())["stop_reason"] == "stop"  # type: ignore[union-attr]


def test_callbacks_choose_what_to_write_and_failures_mean_skip_or_fail(tmp_path: Path) -> None:
    def boom(t: Trajectory) -> bool:
        raise RuntimeError("user bug")

    assert TraceWriter(tmp_path, trace_callback=lambda t: t.sample_index == 1).write(traj(0)) is None
    assert TraceWriter(tmp_path, trace_callback=boom).write(traj(0)) is None
    path = TraceWriter(tmp_path, success_callback=boom).write(traj(5))
    assert path is not None and path.name == "000000-fail-task-5.json"


async def test_engine_writes_one_trace_per_kept_member(smol_tokenizer: Any, tmp_path: Path) -> None:
    eng = AsyncRolloutEngine(ScriptedPolicy(smol_tokenizer, lambda u, t: "ok"),
                             trace_writer=TraceWriter(tmp_path))
    await eng.collect_batch([{"id": "q1", "messages": [{"role": "user", "content": "hi"}]}],
                            group_size=3, step=12)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "000012-ok-q1-0.json", "000012-ok-q1-1.json", "000012-ok-q1-2.json"]

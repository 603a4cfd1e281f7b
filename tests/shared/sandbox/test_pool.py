"""SandboxPool against real bubblewrap."""

from __future__ import annotations

import asyncio
import time

import pytest

from shared.errors import SandboxError, SandboxUnavailable
from shared.sandbox.pool import SandboxPool
from shared.sandbox.reaper import pids_of_uid
from tests.shared.sandbox.conftest import small_limits


async def test_each_slot_runs_as_its_own_unprivileged_uid(pool: SandboxPool) -> None:
    async with pool.session() as first, pool.session() as second:
        a = await first.run("id -u; id -g", language="bash")
        b = await second.run("id -u", language="bash")
    assert a.ok and b.ok
    assert a.stdout.split() == [str(first.uid), str(first.uid)]
    assert b.stdout.strip() == str(second.uid)
    assert first.uid != second.uid and first.uid != 0


async def test_no_capabilities_and_no_new_privileges(pool: SandboxPool) -> None:
    result = await pool.execute(
        "grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status", language="bash"
    )
    fields = dict(line.split(":\t") for line in result.stdout.strip().splitlines())
    assert fields == {"CapPrm": "0000000000000000", "CapEff": "0000000000000000", "NoNewPrivs": "1"}


async def test_python_and_bash_both_run(pool: SandboxPool) -> None:
    py = await pool.execute("print(sum(range(10)))", language="python")
    sh = await pool.execute("echo $((6 * 7))", language="bash")
    assert (py.stdout, py.exit_code) == ("45\n", 0)
    assert (sh.stdout, sh.exit_code) == ("42\n", 0)


async def test_state_lasts_for_a_lease_and_is_wiped_on_release(pool: SandboxPool) -> None:
    async with pool.session() as slot:
        await slot.run("echo kept > note.txt", language="bash")
        again = await slot.run("cat note.txt; ls /tmp | wc -l", language="bash")
        assert again.stdout.split() == ["kept", "0"]  # /tmp is fresh per run, /workspace per lease
        assert slot.read_file("note.txt") == b"kept\n"
    results = await asyncio.gather(
        *(pool.execute("ls -A /workspace | wc -l", language="bash") for _ in range(2))
    )
    assert [r.stdout.strip() for r in results] == ["0", "0"]


async def test_acquire_times_out_when_every_slot_is_leased(pool: SandboxPool) -> None:
    held = [await pool.acquire(), await pool.acquire()]
    started = time.perf_counter()
    with pytest.raises(SandboxUnavailable) as info:
        await pool.acquire(timeout_s=0.2)
    assert 0.2 <= time.perf_counter() - started < 1.0
    assert info.value.status_code == 503 and info.value.retry_after_s == 1.0
    for slot in held:
        await pool.release(slot)
    assert pool.free == 2


async def test_a_dead_sandbox_is_replaced(pool: SandboxPool) -> None:
    slot = await pool.acquire()
    slot.work_dir.rmdir()  # the bind source vanishes: bwrap cannot build this sandbox
    dead = await slot.run("print(1)")
    assert dead.status == "sandbox_error" and slot.broken
    await pool.release(slot)
    assert pool.replaced == 1 and slot.index not in {s.index for s in pool.slots()}
    results = await asyncio.gather(*(pool.execute("print('fine')") for _ in range(2)))
    assert [r.stdout for r in results] == ["fine\n", "fine\n"]


async def test_release_waits_until_the_uid_has_no_process(pool: SandboxPool) -> None:
    slot = await pool.acquire()
    uid = slot.uid
    result = await slot.run("sleep 30 & sleep 30 & wait", language="bash", timeout_s=0.5)
    assert result.status == "timeout"
    await pool.release(slot)
    assert pids_of_uid(uid) == []


async def test_uids_are_not_shared_between_live_pools() -> None:
    async with (
        SandboxPool(2, limits=small_limits()) as one,
        SandboxPool(2, limits=small_limits()) as two,
    ):
        uids_one = {s.uid for s in one.slots()}
        uids_two = {s.uid for s in two.slots()}
    assert len(uids_one) == 2 and len(uids_two) == 2 and not uids_one & uids_two


async def test_close_removes_every_directory() -> None:
    sandbox_pool = await SandboxPool(1, limits=small_limits()).start()
    dirs = [sandbox_pool.slots()[0].work_dir, sandbox_pool.slots()[0].code_dir]
    await sandbox_pool.close()
    assert not any(path.exists() for path in dirs)


async def test_double_release_is_refused(pool: SandboxPool) -> None:
    slot = await pool.acquire()
    await pool.release(slot)
    with pytest.raises(SandboxError, match="not leased"):
        await pool.release(slot)
    assert pool.free == 2


async def test_cancelled_caller_still_kills_the_run_and_resets_the_slot(pool: SandboxPool) -> None:
    task = asyncio.create_task(pool.execute("sleep 30 & sleep 30; wait", language="bash"))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if pool.free == 2:
            break
        await asyncio.sleep(0.02)
    assert pool.free == 2 and all(pids_of_uid(slot.uid) == [] for slot in pool.slots())

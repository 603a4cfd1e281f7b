from __future__ import annotations

from services.envs.counter_env import CounterEnv
from services.envs.sessions import EnvSession, SessionTable


async def test_session_reset_step_state() -> None:
    s = EnvSession("counter", CounterEnv(), kind="ws")
    await s.reset({"seed": 2, "episode_id": "e1", "start": 4})
    result = await s.step({"delta": 1})
    assert result.observation["value"] == 5
    assert s.state() == {"episode_id": "e1", "step_count": 1, "value": 5}


async def test_table_caps_and_reaps_idle_sessions_including_their_sockets() -> None:
    table = SessionTable(max_sessions=2, idle_timeout_s=10)
    closed: list[str] = []
    sessions = []
    for i in range(2):
        assert table.try_reserve()
        s = EnvSession("counter", CounterEnv(), kind="ws")

        async def closer(tag: str = str(i)) -> None:
            closed.append(tag)

        s.closer = closer
        table.add(s)
        sessions.append(s)
    assert not table.try_reserve() and table.active == 2
    sessions[0].last_activity -= 60
    assert await table.reap_idle() == 1
    assert closed == ["0"] and sessions[0].closed and table.active == 1
    await table.release(sessions[0])  # a second release of a reaped session is a no-op
    assert table.active == 1
    assert table.try_reserve()

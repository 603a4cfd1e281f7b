from __future__ import annotations

from services.envs.counter_env import CounterEnv


def test_counter_add_echo_and_limit() -> None:
    env = CounterEnv(limit=5)
    first = env.reset({"start": 2}, seed=1)
    assert first.observation == {"value": 2, "text": "seed=1"}
    r = env.step("add", {"delta": 3})
    assert (r.observation["value"], r.reward, r.done) == (5, 3.0, True)
    assert env.step("echo", {"text": "hey"}).observation["text"] == "hey"
    assert env.step("bogus", {}).observation["text"].startswith("Error: unknown tool")
    assert env.state() == {"value": 5}

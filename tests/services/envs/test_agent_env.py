from __future__ import annotations

from services.envs.agent_env import AgentEnv
from services.envs.counter_env import CounterEnv
from services.envs.routing_env import ToolRoutingEnv
from shared.schema import AgentTask


def _call(name: str, args: str, cid: str = "c1") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def test_reset_returns_messages_tools_and_sample_id() -> None:
    agent = AgentEnv(ToolRoutingEnv(), final_tool="respond")
    messages, info = agent.reset(seed=0)
    assert (
        messages[0]["role"] == "system"
        and messages[1]["content"] == "What is the status of item A1?"
    )
    assert {t["function"]["name"] for t in info["tools"]} == {
        "query_status",
        "delete_item",
        "respond",
    }
    assert info["sample_id"] == "seed-0"


def test_tool_call_then_text_reply_terminates_with_reward() -> None:
    agent = AgentEnv(ToolRoutingEnv(), final_tool="respond")
    agent.reset(seed=0)
    obs, reward, terminated, truncated, _ = agent.step(
        {"content": None, "tool_calls": [_call("query_status", '{"item_id":"A1"}')]}
    )
    assert obs == [{"role": "tool", "tool_call_id": "c1", "content": "A1: shipped"}]
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, info = agent.step("It shipped.")
    assert (obs, reward, terminated, truncated, info["decision"]) == (
        [],
        1.0,
        True,
        False,
        "tool_call",
    )


def test_truncated_after_max_steps_and_task_ids() -> None:
    tasks = [
        AgentTask(id="t-7", messages=[{"role": "user", "content": "count"}], metadata={"start": 1})
    ]
    agent = AgentEnv(CounterEnv(), tasks, max_steps=2)
    messages, info = agent.reset(seed=3)
    assert messages == [{"role": "user", "content": "count"}] and info["sample_id"] == "t-7"
    _, r1, _, trunc1, _ = agent.step({"tool_calls": [_call("add", '{"delta": 2}')]})
    _, r2, term, trunc2, _ = agent.step({"tool_calls": [_call("add", "not json")]})
    assert (r1, r2, trunc1, trunc2, term) == (2.0, 0.0, False, True, False)
    assert agent.env.state() == {"value": 3}


def test_text_holding_a_tool_call_runs_it() -> None:
    agent = AgentEnv(ToolRoutingEnv(), final_tool="respond")
    agent.reset(seed=0)
    text = 'Let me check.\n<tool_call>\n{"name": "query_status", "arguments": {"item_id": "A1"}}\n</tool_call>'
    obs, reward, terminated, truncated, _ = agent.step(text)
    assert obs == [{"role": "tool", "tool_call_id": "call_1_0", "content": "A1: shipped"}]
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, _, info = agent.step("It shipped.")
    assert (obs, reward, terminated, info["decision"]) == ([], 1.0, True, "tool_call")


def test_a_call_that_does_not_parse_is_an_error_observation_not_an_ending() -> None:
    agent = AgentEnv(ToolRoutingEnv(), final_tool="respond")
    agent.reset(seed=0)
    obs, _, terminated, _, info = agent.step('<tool_call>{"name": "query_status", "arguments": {oops</tool_call>')
    assert not terminated and len(obs) == 1 and obs[0]["content"].startswith("Error: tool call not run (invalid_json)")
    assert info["parse_errors"] == [obs[0]["content"]]
    obs, _, terminated, _, _ = agent.step('[query_status(item_id="A1")]')  # pythonic family, auto-detected
    assert not terminated and obs[0]["content"] == "A1: shipped"

from __future__ import annotations

from services.envs.routing_env import SYSTEM_PROMPT, RoutingTask, ToolRoutingEnv, decision_of


def test_system_prompt_names_the_reply_prefixes() -> None:
    for prefix in ("CLARIFY:", "NO_TOOL:", "CONFIRM:"):
        assert prefix in SYSTEM_PROMPT


def test_decision_of_prefixes() -> None:
    assert decision_of("  CONFIRM: sure?") == "confirm"
    assert decision_of("CLARIFY: which?") == "clarify"
    assert decision_of("NO_TOOL: hi") == "no_tool"
    assert decision_of("confirm: lower case") == "answer"


def test_query_then_respond_scores_tool_call() -> None:
    env = ToolRoutingEnv()
    first = env.reset(seed=0)
    assert first.info["messages"][0]["content"] == SYSTEM_PROMPT
    assert env.step("query_status", {"item_id": "A1"}).observation == "A1: shipped"
    final = env.step("respond", {"content": "It has shipped."})
    assert (final.reward, final.done, final.info["decision"]) == (1.0, True, "tool_call")


def test_unconfirmed_delete_is_a_safety_violation_and_keeps_the_item() -> None:
    env = ToolRoutingEnv()
    env.reset(seed=1)  # "Delete item B2." with no confirmation yet
    r = env.step("delete_item", {"item_id": "B2"})
    assert r.done and r.reward == 0.0 and r.info["safety_violation"] == 1
    assert "B2" in env.state()["items"]


def test_confirm_reply_is_right_for_unconfirmed_delete() -> None:
    env = ToolRoutingEnv()
    env.reset(seed=1)
    assert env.step("respond", {"content": "CONFIRM: delete B2?"}).reward == 1.0


def test_confirmed_delete_removes_item() -> None:
    env = ToolRoutingEnv()
    env.reset(seed=2)
    assert env.step("delete_item", {"item_id": "B2"}).observation == "deleted B2"
    assert "B2" not in env.state()["items"]
    assert env.step("respond", {"content": "Done."}).reward == 1.0
    env.reset(seed=2)
    assert "B2" in env.state()["items"]


def test_custom_task_and_wrong_decision() -> None:
    env = ToolRoutingEnv()
    env.reset(RoutingTask(request="Which item?", decision="clarify").model_dump())
    assert env.step("respond", {"content": "NO_TOOL: no idea"}).reward == 0.0
    assert "Available" in env.step("rm", {}).observation

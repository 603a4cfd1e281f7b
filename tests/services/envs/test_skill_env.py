from __future__ import annotations

from pathlib import Path

import pytest

from services.envs.skill_env import SkillEnv, load_skill
from shared.errors import InvalidInput


def test_reset_builds_system_prompt_from_skill() -> None:
    env = SkillEnv()
    first = env.reset()
    assert "order_status" in first.observation and "lookup_order" in first.observation
    assert "at most 4 rounds" in first.observation
    assert [t["function"]["name"] for t in env.tools()] == ["lookup_order", "submit_answer"]


def test_good_answer_gets_full_weighted_reward() -> None:
    env = SkillEnv()
    env.reset()
    assert env.step("lookup_order", {"order_id": "AB-1234"}).observation == "order AB-1234: shipped"
    final = env.step("submit_answer", {"order_id": "AB-1234", "status": "shipped"})
    assert final.done and final.reward == pytest.approx(1.0)


def test_bad_answer_gets_partial_reward() -> None:
    env = SkillEnv()
    env.reset()
    final = env.step("submit_answer", {"order_id": "1234", "status": "shipped"})
    # format 1.0 * 0.3 + audit 0.5 * 0.7
    assert final.reward == pytest.approx(0.65)
    assert final.info["audit"]["failed"] == ["order_id"]


def test_disallowed_tool_and_round_budget(tmp_path: Path) -> None:
    skill = tmp_path / "tiny.yaml"
    skill.write_text("skill_name: tiny\navailable_tools: [lookup_order]\nmax_rounds: 2\n")
    env = SkillEnv(skill=skill)
    env.reset()
    assert "not allowed" in env.step("rm_rf", {}).observation
    last = env.step("lookup_order", {"order_id": "AB-1234"})
    assert last.done and last.info["truncated"] is True


def test_unreadable_skill_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="Cannot read skill"):
        load_skill(tmp_path / "missing.yaml")

"""Agent Harness seed (003): the skill YAML's ``reward_weights`` scored by the reward service.

The seed's YAML is given to ``trajforge score --reward`` as written;
``tool_accuracy``, ``answer_f1`` and ``reasoning_quality`` map to the
``tool_accuracy``, ``answer_f1`` and ``reasoning_quality`` components (real
scorers, documented in ``shared.skills.scoring``), ``audit_rules`` to the
``audit`` component, which agrees with the skill env's audit. Reward specs
check each component's params: an unknown one is a 422 (REST) or a clear
error naming it (``trajforge score``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.envs.skill_env import SkillEnv
from services.reward.app import SERVICE
from services.reward.registry import get_component
from services.reward.spec import RewardSpec
from shared.schema import Trajectory
from tests.conftest import REPO_ROOT
from tests.seeds.test_skill_harness import ANSWER, REASONING, SCHEMAS, SEED_YAML, UNIPROT

TOOLS = [{"type": "function", "function": {"name": n, "parameters": p}} for n, p in SCHEMAS.items()]


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def episode(answer: dict[str, Any], *, reasoning: str = REASONING, accession: str = "P00330",
            result: str = UNIPROT, thought: str = "Look the enzyme up in UniProt.") -> dict[str, Any]:
    """One harness episode as a trajectory: a thought + UniProt call, its result, then the submitted answer."""
    return {"messages": [
        {"role": "user", "content": "Which reaction does P00330 catalyse?"},
        {"role": "assistant", "content": thought or None,
         "tool_calls": [_call("c1", "UniProt_API", {"accession": accession})]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
        {"role": "assistant", "content": None, "reasoning_content": reasoning,
         "tool_calls": [_call("c2", "submit_answer", answer)]},
        {"role": "tool", "tool_call_id": "c2", "content": "answer received"},
    ], "tools": TOOLS, "ground_truth": {"answer": ANSWER}}


def _score_cli(tmp_path: Path, rows: list[dict[str, Any]], spec_text: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.yaml").write_text(spec_text)
    return subprocess.run([sys.executable, "-m", "services.cli", "score", str(tmp_path / "in.jsonl"), "--reward",
                           str(tmp_path / "spec.yaml"), "-o", str(tmp_path / "out.jsonl")], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "COLUMNS": "160"})


def test_trajforge_score_with_the_seed_skill_yaml(tmp_path: Path) -> None:
    rows = [episode(ANSWER),
            episode({**ANSWER, "substrate": "methanol"}),
            episode(ANSWER, reasoning="", accession="Q99999", result="Error: unknown accession", thought="")]
    proc = _score_cli(tmp_path, rows, SEED_YAML)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    parts = [{r["component"]: r["score"] for r in row["rewards"]} for row in out]
    assert [list(p) for p in parts] == [["tool_accuracy", "answer_f1", "reasoning_quality"]] * 3
    assert parts[0] == {"tool_accuracy": 1.0, "answer_f1": 1.0, "reasoning_quality": 1.0}
    assert out[0]["reward"] == pytest.approx(1.0)
    assert parts[1]["answer_f1"] == pytest.approx(2 / 3) and parts[1]["tool_accuracy"] == 1.0
    assert parts[1]["reasoning_quality"] < 1.0  # its reasoning names ethanol, its answer methanol
    assert parts[2] == {"tool_accuracy": 0.0, "answer_f1": 1.0, "reasoning_quality": 0.0}
    assert out[2]["reward"] == pytest.approx(0.4)


def test_reward_and_env_agree_on_the_same_episode(tmp_path: Path) -> None:
    """The env's reward at submit equals the reward service's total for the episode it produced."""
    path = tmp_path / "skill.yaml"
    path.write_text(SEED_YAML)
    env = SkillEnv(skill=path, handlers={"UniProt_API": lambda a: UNIPROT}, tool_schemas=SCHEMAS)
    env.reset({"ground_truth": {"answer": ANSWER}})
    env.step("UniProt_API", {"accession": "P00330"})
    env.observe_reasoning("Look the enzyme up in UniProt.")
    wrong = {**ANSWER, "product": "acetate"}
    final = env.step("submit_answer", {**wrong, "reasoning": REASONING})
    from shared.skills import load_skill_file

    spec = RewardSpec.from_skill(load_skill_file(path))
    from services.reward.service import score_trajectory

    row = episode(wrong)
    scored = score_trajectory(Trajectory.model_validate(row), spec, row["ground_truth"])
    assert scored.score == pytest.approx(final.reward)
    for key in ("tool_accuracy", "answer_f1", "reasoning_quality"):
        assert scored.metrics[key] == pytest.approx(final.info["scores"][key]), key


def test_audit_component_agrees_with_the_env_audit() -> None:
    """A valid EC number under the seed's allow rule is not an audit hit (audit_hits=0), in either form."""
    audit = get_component("audit")
    rule_list = [{"field": "ec_number", "pattern": r"^\d+\.\d+\.\d+\.\d+$"}]
    for rules in (rule_list, {"ec_number": r"^\d+\.\d+\.\d+\.\d+$"}):
        params = {"answer_format": {"required_fields": ["ec_number", "substrate", "product"]}, "audit_rules": rules}
        good = audit(Trajectory.model_validate(episode(ANSWER)), {}, **params)
        assert good.metrics["audit_hits"] == 0.0 and good.score == 1.0
        bad = audit(Trajectory.model_validate(episode({**ANSWER, "ec_number": "EC1.1"})), {}, **params)
        assert bad.metrics["audit_hits"] == 1.0 and bad.score == 0.0
        env = SkillEnv(skill={"skill_name": "e", "audit_rules": rules,
                              "answer_format": {"required_fields": ["ec_number", "substrate", "product"]}})
        env.reset()
        assert env.step("submit_answer", ANSWER).info["audit"]["violations"] == []


def test_reasoning_quality_is_a_rubric_not_a_constant() -> None:
    comp = get_component("reasoning_quality")
    scores = [comp(Trajectory.model_validate(episode(ANSWER, reasoning=text, thought="")), {}).score for text in (
        REASONING, "ok", " ".join(["ethanol acetaldehyde 1.1.1.1"] * 4), "")]
    # all five criteria; bounded + non_repetitive only; all but non_repetitive; nothing written
    assert scores == [1.0, pytest.approx(0.4), pytest.approx(0.8), 0.0]


def test_unknown_param_in_trajforge_score_is_named(tmp_path: Path) -> None:
    proc = _score_cli(tmp_path, [episode(ANSWER)],
                      "components:\n  - name: tool_call\n    params: {mode: bfcl, strictness: 3}\n")
    assert proc.returncode == 2 and "strictness" in proc.stderr and "tool_call" in proc.stderr
    assert "input_value" not in proc.stderr


@pytest.fixture
async def client(make_client: Any) -> httpx.AsyncClient:
    return await make_client(SERVICE)  # type: ignore[no-any-return]


async def test_unknown_param_is_a_422_naming_it(client: httpx.AsyncClient) -> None:
    row = episode(ANSWER)
    for name, params in (("tool_call", {"mode": "bfcl", "strict": True}), ("answer_f1", {"fields": ["a"]}),
                         ("bfcl", {"languge": "java"}), ("audit", {"audit_rules": [{"field": "x"}]})):
        body = {"trajectories": [row], "spec": {"components": [{"name": name, "params": params}]}}
        resp = await client.post("/v1/rewards/score", json=body)
        assert resp.status_code == 422, (name, resp.text)
        text = resp.text
        assert name in text and (next(iter(params)) in text or "pattern" in text), text
    ok = {"trajectories": [row], "ground_truths": [row["ground_truth"]],
          "spec": {"components": [{"name": "answer_f1", "params": {"required_fields": list(ANSWER)}}]}}
    resp = await client.post("/v1/rewards/score", json=ok)
    assert resp.status_code == 200 and resp.json()["results"][0]["score"] == 1.0

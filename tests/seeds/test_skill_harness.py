"""Agent Harness seed (003): the skill YAML and ``AgentEnv`` reset/step, written as the document shows them.

The YAML below is the document's own example. ``AgentEnv.reset(seed)`` returns
``(messages_list, {"tools": schema, "sample_id": id})`` after loading the task
and routing it to its skill; ``step(action)`` returns the Gym 5-tuple.
trajforge differs in two documented ways, both accepted here: an action may be
an OpenAI assistant message (tool calls) as well as text, and the final answer
is given by the ``submit_answer`` tool (or as a JSON object in a text reply).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.envs.agent_env import AgentEnv
from services.envs.skill_env import SkillEnv, load_skill
from shared.errors import InvalidInput
from shared.schema import AgentTask

SEED_YAML = r'''skill_name: enzyme_catalysis
available_tools: [CLEAN, mmseqs2, UniProt_API]
max_rounds: 8
answer_format:
  required_fields: ["ec_number", "substrate", "product"]
audit_rules:
  - field: "ec_number"
    pattern: "^\\d+\\.\\d+\\.\\d+\\.\\d+$"
reward_weights:
  tool_accuracy: 0.3
  answer_f1: 0.4
  reasoning_quality: 0.3
'''

ANSWER = {"ec_number": "1.1.1.1", "substrate": "ethanol", "product": "acetaldehyde"}
UNIPROT = "P00330 alcohol dehydrogenase 1: catalyses ethanol + NAD+ to acetaldehyde + NADH; EC 1.1.1.1"
HANDLERS = {
    "UniProt_API": lambda args: UNIPROT if args.get("accession") == "P00330" else "Error: unknown accession",
    "CLEAN": lambda args: "predicted EC 1.1.1.1 (confidence 0.97)",
    "mmseqs2": lambda args: "best hit P00330 identity 0.99",
}
SCHEMAS = {
    "UniProt_API": {"type": "object", "properties": {"accession": {"type": "string"}}, "required": ["accession"]},
    "CLEAN": {"type": "object", "properties": {"sequence": {"type": "string"}}, "required": ["sequence"]},
    "mmseqs2": {"type": "object", "properties": {"sequence": {"type": "string"}}, "required": ["sequence"]},
}
REASONING = ("UniProt entry P00330 says alcohol dehydrogenase catalyses ethanol to acetaldehyde with NAD+, "
             "so the EC number is 1.1.1.1, the substrate is ethanol and the product is acetaldehyde.")


@pytest.fixture
def skill_file(tmp_path: Path) -> Path:
    path = tmp_path / "enzyme_catalysis.yaml"
    path.write_text(SEED_YAML, encoding="utf-8")
    return path


def _tasks() -> list[AgentTask]:
    return [AgentTask(id="enzyme-1", messages=[{"role": "user", "content": "Which reaction does P00330 catalyse?"}],
                      ground_truth={"answer": ANSWER}, metadata={"skill": "enzyme_catalysis"})]


def _agent(skill_file: Path, **kw: Any) -> AgentEnv:
    return AgentEnv(tasks=_tasks(), skills=[skill_file], tool_handlers=HANDLERS, tool_schemas=SCHEMAS, **kw)


def _call(name: str, args: dict[str, Any], cid: str = "c1") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def test_seed_yaml_loads_with_list_audit_rules(skill_file: Path) -> None:
    spec = load_skill(skill_file)
    assert spec.skill_name == "enzyme_catalysis" and spec.max_rounds == 8
    assert spec.available_tools == ["CLEAN", "mmseqs2", "UniProt_API"]
    assert spec.answer_format.required_fields == ["ec_number", "substrate", "product"]
    assert [(r.field, r.pattern) for r in spec.audit_rules] == [("ec_number", r"^\d+\.\d+\.\d+\.\d+$")]
    assert spec.reward_weights == {"tool_accuracy": 0.3, "answer_f1": 0.4, "reasoning_quality": 0.3}


def test_reset_routes_the_task_to_its_skill(skill_file: Path) -> None:
    agent = _agent(skill_file)
    messages_list, info = agent.reset(seed=0)
    assert set(info) >= {"tools", "sample_id"} and info["sample_id"] == "enzyme-1"
    assert info["skill"] == "enzyme_catalysis"
    assert messages_list[0]["role"] == "system" and "enzyme_catalysis" in messages_list[0]["content"]
    assert "at most 8 rounds" in messages_list[0]["content"] and "ec_number" in messages_list[0]["content"]
    assert messages_list[1] == {"role": "user", "content": "Which reaction does P00330 catalyse?"}
    names = [t["function"]["name"] for t in info["tools"]]
    assert names == ["CLEAN", "mmseqs2", "UniProt_API", "submit_answer"]
    submit = info["tools"][-1]["function"]["parameters"]
    assert submit["required"] == ["ec_number", "substrate", "product"]
    assert agent.max_steps == 8


def test_perfect_episode_scores_every_weight(skill_file: Path) -> None:
    agent = _agent(skill_file)
    agent.reset(seed=0)
    observation, reward, terminated, truncated, info = agent.step(
        {"content": "I should look the enzyme up.", "tool_calls": [_call("UniProt_API", {"accession": "P00330"})]})
    assert observation[0]["content"] == UNIPROT and (reward, terminated, truncated) == (0.0, False, False)
    observation, reward, terminated, truncated, info = agent.step(
        {"content": None, "tool_calls": [_call("submit_answer", {**ANSWER, "reasoning": REASONING}, "c2")]})
    assert terminated and not truncated
    assert info["scores"]["tool_accuracy"] == 1.0 and info["scores"]["answer_f1"] == 1.0
    assert info["scores"]["reasoning_quality"] == 1.0 and info["audit"]["violations"] == []
    assert reward == pytest.approx(0.3 + 0.4 + 0.3)


def test_each_scorer_responds_to_what_went_wrong(skill_file: Path) -> None:
    agent = _agent(skill_file)
    agent.reset(seed=0)
    agent.step({"tool_calls": [_call("UniProt_API", {"accession": "Q99999"})]})  # an error result
    agent.step({"tool_calls": [_call("BLAST", {"q": "x"}, "c2")]})               # not an available tool
    wrong = {"ec_number": "1.1.1.1", "substrate": "methanol", "product": "acetaldehyde"}
    _, reward, terminated, _, info = agent.step({"tool_calls": [_call("submit_answer", wrong, "c3")]})
    scores = info["scores"]
    assert terminated and scores["tool_accuracy"] == 0.0
    assert scores["answer_f1"] == pytest.approx(2 / 3)
    assert scores["reasoning_quality"] == 0.0  # no reasoning written
    assert reward == pytest.approx(0.4 * 2 / 3)


def test_text_reply_with_json_answer_is_submitted(skill_file: Path) -> None:
    """Deliberate difference: a plain-text final reply carrying the JSON answer is graded like submit_answer."""
    agent = _agent(skill_file)
    agent.reset(seed=0)
    agent.step({"content": "Checking UniProt first.", "tool_calls": [_call("UniProt_API", {"accession": "P00330"})]})
    text = REASONING + '\n{"ec_number": "1.1.1.1", "substrate": "ethanol", "product": "acetaldehyde"}'
    _, reward, terminated, truncated, info = agent.step(text)
    assert terminated and not truncated and info["answer"] == ANSWER
    assert info["scores"]["answer_f1"] == 1.0 and reward > 0.9


def test_dict_rules_and_format_audit_weights(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text('skill_name: s\nanswer_format: {required_fields: [ec_number]}\n'
                    'audit_rules: {ec_number: "^\\\\d+\\\\.\\\\d+\\\\.\\\\d+\\\\.\\\\d+$"}\n'
                    'reward_weights: {format: 0.5, audit: 0.5}\n')
    env = SkillEnv(skill=path)
    env.reset()
    good = env.step("submit_answer", {"ec_number": "2.7.11.1"})
    assert good.reward == pytest.approx(1.0) and good.info["audit"]["violations"] == []
    env.reset()
    bad = env.step("submit_answer", {"ec_number": "2.7.11"})
    assert bad.reward == pytest.approx(0.5) and bad.info["audit"]["failed"] == ["ec_number"]


def test_max_rounds_truncates(skill_file: Path) -> None:
    agent = _agent(skill_file)
    agent.reset(seed=0)
    outcomes = [agent.step({"tool_calls": [_call("CLEAN", {"sequence": "MSTA"}, f"c{i}")]}) for i in range(8)]
    assert [o[2] or o[3] for o in outcomes[:7]] == [False] * 7
    assert outcomes[7][2] and outcomes[7][4]["truncated"] is True


def test_unknown_skill_is_named(skill_file: Path) -> None:
    agent = AgentEnv(tasks=[AgentTask(id="x", metadata={"skill": "protein_folding"})], skills=[skill_file])
    with pytest.raises(InvalidInput, match="protein_folding"):
        agent.reset(seed=0)


@pytest.mark.parametrize(("yaml_text", "field"), [
    ("skill_name: s\naudit_rules:\n  - field: ec\n    pattern: '([a-z'\n", "audit_rules[0].pattern"),
    ("skill_name: s\naudit_rules:\n  - pattern: x\n", "audit_rules[0].field"),
    ("skill_name: s\nreward_weights: {tool_acuracy: 1.0}\n", "reward_weights"),
    ("skill_name: s\nmax_rounds: zero\n", "max_rounds"),
    ("skill_name: s\nanswer_format: {required: [a]}\n", "answer_format.required"),
    ("available_tools: [a]\n", "skill_name"),
])
def test_bad_yaml_is_a_clear_error_naming_the_field(tmp_path: Path, yaml_text: str, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    with pytest.raises(InvalidInput) as caught:
        load_skill(path)
    message = str(caught.value)
    assert field in message and "pydantic" not in message and "input_value" not in message
    assert caught.value.param == field.split(":")[0] or caught.value.param.startswith(field.split(".")[0])

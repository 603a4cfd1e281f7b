"""The shared schema reads every real row liberally and writes it canonically."""

from __future__ import annotations

import json

import pytest

from shared.schema import Message, SamplingParams, TokenData, ToolCall, ToolInfo, Trajectory
from tests.conftest import shared_data_dir

DATA_FILES = sorted(shared_data_dir().glob("*.jsonl"))


def _rows(path, limit=None):  # type: ignore[no-untyped-def]
    with open(path, "rb") as fh:
        for i, line in enumerate(fh):
            if limit is not None and i >= limit:
                return
            yield json.loads(line)


def test_the_real_data_is_there() -> None:
    assert len(DATA_FILES) >= 16, f"expected the shared data files in {shared_data_dir()}"


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.stem)
def test_real_rows_round_trip(path) -> None:  # type: ignore[no-untyped-def]
    for row in _rows(path):
        traj = Trajectory.model_validate(row)
        out = traj.to_row()
        assert out["id"] == str(row["id"])
        assert len(out["messages"]) == len(row["messages"])
        for original, written in zip(row["messages"], out["messages"], strict=True):
            assert written["role"] == original["role"]
            assert written.get("content") == original.get("content")
            for call in written.get("tool_calls", []):
                assert isinstance(call["function"]["arguments"], str)
        # Written rows read back to the same model.
        assert Trajectory.model_validate(out) == traj
        # Unknown keys (ground_truth, source, reward, ...) survive.
        for key in row:
            if key not in ("messages", "tools"):
                assert key in out


def test_arguments_object_becomes_canonical_json_text() -> None:
    msg = Message.model_validate({"role": "assistant", "content": None,
                                  "tool_calls": [{"id": "c1", "type": "function",
                                                  "function": {"name": "f", "arguments": {"b": 1, "a": "é"}}}]})
    assert msg.tool_calls is not None
    assert json.loads(msg.tool_calls[0].function.arguments) == {"b": 1, "a": "é"}
    assert "é" in msg.tool_calls[0].function.arguments  # non-ASCII kept, not escaped


def test_tool_calls_serialised_as_json_string_by_arrow() -> None:
    calls = json.dumps([{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    msg = Message.model_validate({"role": "assistant", "content": "", "tool_calls": calls})
    assert msg.tool_calls is not None and msg.tool_calls[0].name == "f"
    assert Message.model_validate({"role": "assistant", "tool_calls": "[]"}).tool_calls is None
    assert Message.model_validate({"role": "assistant", "tool_calls": ""}).tool_calls is None


def test_thinking_is_read_as_reasoning_content() -> None:
    msg = Message.model_validate({"role": "assistant", "content": "4", "thinking": "2+2"})
    assert msg.reasoning_content == "2+2"
    assert "thinking" not in msg.to_openai()


def test_content_parts_and_single_part_dict() -> None:
    parts = Message.model_validate({"role": "user", "content": [{"type": "text", "text": "a"},
                                                                 {"type": "image_url", "image_url": {"url": "u"}},
                                                                 {"type": "text", "text": "b"}]})
    assert parts.text() == "a b"
    single = Message.model_validate({"role": "user", "content": {"type": "text", "text": "hi"}})
    assert single.text() == "hi"
    assert parts.to_openai()["content"][1]["image_url"] == {"url": "u"}


def test_flat_tool_call_and_tool_info_forms() -> None:
    call = ToolCall.model_validate({"name": "get", "arguments": {"q": 1}})
    assert call.function.name == "get" and json.loads(call.arguments) == {"q": 1}
    info = ToolInfo.model_validate({"name": "get", "description": "d", "parameters": {"type": "object"}})
    assert info.name == "get" and info.type == "function"


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValueError):
        Message.model_validate({"role": "bot", "content": "x"})


def test_sampling_params_accept_num_samples_and_bounds() -> None:
    assert SamplingParams.model_validate({"num_samples": 4}).n == 4
    with pytest.raises(ValueError):
        SamplingParams(temperature=-1)
    out = SamplingParams(top_k=20, max_tokens=5, logprobs=True).to_openai()
    assert out["top_k"] == 20 and out["max_tokens"] == 5 and out["logprobs"] is True


def test_token_data_labels_mask_non_sampled_tokens() -> None:
    data = TokenData(prompt_ids=[1, 2], response_ids=[3, 4, 5], loss_mask=[1, 0, 1], logprobs=[-0.1, None, -0.2])
    assert data.input_ids == [1, 2, 3, 4, 5]
    assert data.labels == [-100, -100, 3, -100, 5]
    with pytest.raises(ValueError):
        TokenData(response_ids=[1, 2], loss_mask=[1])


def test_trajectory_reward_is_weighted_sum_of_ok_components() -> None:
    traj = Trajectory.model_validate({"messages": [{"role": "user", "content": "x"}], "rewards": [
        {"component": "a", "score": 1.0, "weight": 0.5},
        {"component": "b", "score": 0.5, "weight": 1.0},
        {"component": "c", "score": None, "status": "failed", "error": "boom"},
    ]})
    assert traj.reward == pytest.approx(1.0)


def test_none_values_in_user_data_survive_writing() -> None:
    # Regression: exclude_none used to drop these (ground truth with null arguments, extra keys set to null).
    row = {"id": 7, "messages": [{"role": "user", "content": "x"}], "acceptable_arguments": None,
           "ground_truth": {"tool_calls": [{"name": "f", "arguments": {"a": None}}]},
           "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                                                                                  "default": None}}}]}
    out = Trajectory.model_validate(row).to_row()
    assert out["acceptable_arguments"] is None
    assert out["ground_truth"]["tool_calls"][0]["arguments"] == {"a": None}
    assert out["tools"][0]["function"]["parameters"]["default"] is None

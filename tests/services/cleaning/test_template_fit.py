"""TemplateFitnessFilter with template files, an HF-style directory and the local model's GGUF template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.cleaning.registry import build_step
from services.cleaning.template_fit import TemplateFitnessFilter
from shared.errors import InvalidInput

# A template that renders tool calls and tool results (the shape of current tool-use templates).
TOOLS = """{% for m in messages %}<|{{ m.role }}|>
{% if m.content %}{{ m.content }}{% endif %}
{% for c in m.tool_calls or [] %}<call>{{ c.function.name }} {{ c.function.arguments | tojson }}</call>
{% endfor %}{% endfor %}{% if add_generation_prompt %}<|assistant|>
{% endif %}"""
# An older chat-only template: tool turns vanish, and a tool role is refused outright.
CHAT_ONLY = """{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('tool role not supported') }}{% endif %}
{% if m.role in ['user', 'assistant'] and m.content %}<|{{ m.role }}|>{{ m.content }}
{% endif %}{% endfor %}"""

CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
PLAIN = {"id": "plain", "messages": [{"role": "user", "content": "Say hi to the team in French, please."},
                                     {"role": "assistant", "content": "Bonjour à toute l'équipe !"}]}
CALL_ONLY = {"id": "call", "messages": [{"role": "user", "content": "Weather in Paris?"},
                                        {"role": "assistant", "content": None, "tool_calls": [CALL]}]}
WITH_RESULT = {"id": "result", "messages": [*CALL_ONLY["messages"],
                                            {"role": "tool", "tool_call_id": "c1", "content": '{"temp_c": 21}'},
                                            {"role": "assistant", "content": "It is 21 °C in Paris."}]}


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "t.jinja"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_tool_aware_template_keeps_every_row(tmp_path: Path) -> None:
    f = TemplateFitnessFilter(template=_write(tmp_path, TOOLS))
    kept, dropped = f([PLAIN, CALL_ONLY, WITH_RESULT])
    assert [r["id"] for r in kept] == ["plain", "call", "result"] and not dropped


def test_a_chat_only_template_drops_tool_rows_with_the_reason(tmp_path: Path) -> None:
    f = build_step({"name": "TemplateFitnessFilter", "params": {"template": _write(tmp_path, CHAT_ONLY)}})
    kept, dropped = f([PLAIN, CALL_ONLY, WITH_RESULT])
    assert [r["id"] for r in kept] == ["plain"]
    by_id = {r["id"]: r for r in dropped}
    assert {r["drop_reason"] for r in dropped} == {"template_unfit"}
    assert by_id["call"]["drop_evidence"] == {"check": "tool_call_lost", "message_index": 1, "call": "get_weather"}
    assert by_id["result"]["drop_evidence"]["check"] == "render_error"
    assert "tool role not supported" in by_id["result"]["drop_evidence"]["error"]


def test_a_template_that_drops_arguments_is_caught(tmp_path: Path) -> None:
    names_only = TOOLS.replace(" {{ c.function.arguments | tojson }}", "")
    _, dropped = TemplateFitnessFilter(template=_write(tmp_path, names_only))([CALL_ONLY])
    assert dropped[0]["drop_evidence"]["check"] == "tool_arguments_lost"
    assert dropped[0]["drop_evidence"]["window"] == "Paris"


def test_hf_model_directory_template(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": TOOLS}), encoding="utf-8")
    kept, _ = TemplateFitnessFilter(template=str(tmp_path))([WITH_RESULT])
    assert kept


def test_bad_sources_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        TemplateFitnessFilter(template=str(tmp_path / "missing.jinja"))
    with pytest.raises(InvalidInput, match="does not compile"):
        TemplateFitnessFilter(template=_write(tmp_path, "{% for %}"))


def test_the_local_models_template_cannot_carry_tool_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    # SmolLM2's template concatenates message['content']: a tool-call turn (content null) fails.
    monkeypatch.delenv("TRAJFORGE_LOCAL_MODEL", raising=False)
    f = TemplateFitnessFilter(template="local")
    kept, dropped = f([PLAIN, CALL_ONLY])
    assert [r["id"] for r in kept] == ["plain"]
    assert dropped[0]["drop_evidence"]["check"] in ("render_error", "tool_call_lost")

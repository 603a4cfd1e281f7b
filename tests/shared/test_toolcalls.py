"""The shared tool-call parser: every family, good and bad, with spans and statuses."""

from __future__ import annotations

import gc
import json
import time

import pytest

from shared.schema import ToolCall
from shared.toolcalls import UnknownFamily, detect_family, family_names, parse_tool_calls

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                       "metric": {"type": "boolean"}, "opts": {"type": "object"}},
    }}},
    {"type": "function", "function": {"name": "list_devices", "parameters": {}}},
]
DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_BEGIN, DS_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def _spans_match(text: str, result) -> None:
    for call in result.calls:
        assert text[call.start : call.end] == call.raw


# ---------------------------------------------------------------- hermes


def test_hermes_single_call_with_text_around() -> None:
    text = 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\nDone.'
    result = parse_tool_calls(text, family="hermes", tools=TOOLS)
    assert [c.status for c in result.calls] == ["ok"]
    assert result.calls[0].name == "get_weather"
    assert result.calls[0].arguments == {"city": "Paris"}
    assert result.content == "Let me look.\n\nDone."
    assert result.calls[0].start == text.index("<tool_call>")
    _spans_match(text, result)


def test_hermes_parallel_calls_convert_to_tool_calls() -> None:
    text = "".join(
        f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "{c}"}}}}</tool_call>\n'
        for c in ("Paris", "Tokyo")
    )
    result = parse_tool_calls(text)
    assert result.family == "hermes"
    calls = result.to_tool_calls()
    assert all(isinstance(c, ToolCall) for c in calls)
    assert [c.id for c in calls] == ["call_0", "call_1"]
    assert [json.loads(c.function.arguments)["city"] for c in calls] == ["Paris", "Tokyo"]
    assert calls[0].function.arguments == '{"city": "Paris"}'
    ids = result.to_tool_calls(id_factory=lambda i: f"x{i * 10}")
    assert [c.id for c in ids] == ["x0", "x10"]


def test_hermes_close_tag_inside_string_value() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "a</tool_call>b {"}}</tool_call>'
    result = parse_tool_calls(text, family="hermes")
    assert result.calls[0].status == "ok"
    assert result.calls[0].arguments == {"city": "a</tool_call>b {"}
    assert result.calls[0].end == len(text)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ('{"name": "get_weather", "arguments": {"city": "Paris",}}', "invalid_json"),
        ("{'name': 'get_weather', 'arguments': {}}", "invalid_json"),
        ('{"name": "get_weather", "arguments": {"city": "a", "city": "b"}}', "invalid_json"),
        ('{"arguments": {"city": "Paris"}}', "missing_name"),
        ('{"name": "", "arguments": {}}', "missing_name"),
        ('{"name": "get_weather", "arguments": [1, 2]}', "not_object"),
        ('{"name": "get_weather", "arguments": "\\"{}\\""}', "not_object"),
        ('["get_weather"]', "not_object"),
        ('{"name": "launch_rocket", "arguments": {}}', "unknown_tool"),
    ],
)
def test_hermes_malformed_calls_keep_a_status(body: str, status: str) -> None:
    text = f"ok <tool_call>{body}</tool_call> after"
    result = parse_tool_calls(text, family="hermes", tools=TOOLS)
    assert [c.status for c in result.calls] == [status]
    assert result.content == "ok  after"
    assert result.ok_calls == []
    assert result.to_tool_calls() == []
    _spans_match(text, result)


def test_hermes_empty_and_string_arguments_are_objects() -> None:
    text = ('<tool_call>{"name": "list_devices", "arguments": ""}</tool_call>'
            '<tool_call>{"name": "list_devices", "arguments": null}</tool_call>'
            '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}</tool_call>')
    result = parse_tool_calls(text, tools=TOOLS)
    assert [c.arguments for c in result.calls] == [{}, {}, {"city": "Oslo"}]


def test_hermes_truncated_output_is_unclosed() -> None:
    text = 'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    result = parse_tool_calls(text)
    assert [c.status for c in result.calls] == ["unclosed"]
    assert result.calls[0].end == len(text)
    assert result.content == "Checking."


def test_hermes_complete_json_without_close_tag_keeps_name() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
    call = parse_tool_calls(text).calls[0]
    assert (call.status, call.name, call.arguments) == ("unclosed", "get_weather", {"city": "Paris"})


def test_hermes_cut_call_followed_by_good_call() -> None:
    text = '<tool_call>{"name": "get_weather"\n<tool_call>{"name": "list_devices", "arguments": {}}</tool_call>'
    result = parse_tool_calls(text, tools=TOOLS)
    assert [c.status for c in result.calls] == ["unclosed", "ok"]
    assert result.calls[1].name == "list_devices"


# ---------------------------------------------------------------- reasoning


def test_think_block_is_separated_and_its_calls_ignored() -> None:
    text = ('<think>maybe <tool_call>{"name": "list_devices", "arguments": {}}</tool_call></think>\n'
            '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>')
    result = parse_tool_calls(text)
    assert [c.name for c in result.calls] == ["get_weather"]
    assert result.reasoning is not None and "maybe" in result.reasoning
    assert result.content == ""
    _spans_match(text, result)


def test_unclosed_leading_think_prefilled_by_template() -> None:
    text = 'thinking about CLARIFY: stuff</think>NO_TOOL: nothing to do'
    result = parse_tool_calls(text)
    assert result.reasoning == "thinking about CLARIFY: stuff"
    assert result.content == "NO_TOOL: nothing to do"
    assert result.calls == []


def test_truncated_inside_think_is_all_reasoning() -> None:
    text = '<think>I should call <tool_call>{"name": "get_weather"'
    result = parse_tool_calls(text)
    assert result.calls == [] and result.content == ""
    assert result.reasoning is not None and result.reasoning.startswith("I should call")


# ---------------------------------------------------------------- qwen3-coder XML


def test_qwen_xml_schema_typed_values() -> None:
    text = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
            "<parameter=days>\n3\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n"
            '<parameter=opts>\n{"a": 1}\n</parameter>\n</function>\n</tool_call>')
    result = parse_tool_calls(text, tools=TOOLS)
    assert result.family == "qwen3_coder"
    assert result.calls[0].arguments == {"city": "New York", "days": 3, "metric": True, "opts": {"a": 1}}


def test_qwen_xml_bad_boolean_stays_a_string_not_false() -> None:
    text = "<tool_call><function=get_weather><parameter=metric>yes</parameter></function></tool_call>"
    call = parse_tool_calls(text, family="qwen3_coder", tools=TOOLS).calls[0]
    assert call.arguments == {"metric": "yes"}


def test_qwen_xml_without_schema_keeps_strings_and_parallel_calls() -> None:
    text = ("<tool_call><function=f><parameter=n>5</parameter></function></tool_call>\n"
            "<tool_call><function=g><parameter=x>a\nb</parameter></function></tool_call>")
    result = parse_tool_calls(text, family="qwen3_coder")
    assert [(c.name, c.arguments) for c in result.calls] == [("f", {"n": "5"}), ("g", {"x": "a\nb"})]


def test_qwen_xml_missing_parameter_close_and_truncation() -> None:
    text = ("<tool_call><function=f><parameter=a>1<parameter=b>2</function></tool_call>"
            "<tool_call><function=g><parameter=a>1")
    result = parse_tool_calls(text, family="qwen3_coder")
    assert [c.status for c in result.calls] == ["ok", "unclosed"]
    assert result.calls[0].arguments == {"a": "1", "b": "2"}
    _spans_match(text, result)


def test_qwen_xml_missing_name_and_unknown_tool() -> None:
    text = ("<tool_call><function=><parameter=a>1</parameter></function></tool_call>"
            "<tool_call><function=nuke></function></tool_call>")
    result = parse_tool_calls(text, tools=TOOLS)
    assert [c.status for c in result.calls] == ["missing_name", "unknown_tool"]


# ---------------------------------------------------------------- llama3 JSON


def test_llama_python_tag_and_parameters_key() -> None:
    text = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Lima"}}; {"name": "list_devices", "parameters": {}}'
    result = parse_tool_calls(text, tools=TOOLS)
    assert result.family == "llama3_json"
    assert [(c.name, c.arguments) for c in result.calls] == [("get_weather", {"city": "Lima"}), ("list_devices", {})]
    assert result.content == ""


def test_llama_bare_json_message_and_malformed() -> None:
    good = parse_tool_calls('{"name": "get_weather", "parameters": {"city": "Lima"}}', family="llama3_json")
    assert good.calls[0].status == "ok"
    bad = parse_tool_calls('{"name": "get_weather", "parameters": {"city": Lima}}', family="llama3_json")
    assert bad.calls[0].status == "invalid_json"
    cut = parse_tool_calls('{"name": "get_weather", "parameters": {"ci', family="llama3_json")
    assert cut.calls[0].status == "unclosed"
    nameless = parse_tool_calls('{"parameters": {}}', family="llama3_json")
    assert nameless.calls[0].status == "missing_name"


def test_bare_json_answer_is_not_a_call_in_auto_mode() -> None:
    assert parse_tool_calls('{"answer": 4, "sources": []}').calls == []
    assert parse_tool_calls('{"answer": 4}', family="llama3_json").calls[0].status == "missing_name"
    assert parse_tool_calls('{"name": "f", "parameters": {}}').family == "llama3_json"


def test_llama_json_inside_prose_is_not_a_call() -> None:
    result = parse_tool_calls('Use a body like {"name": "x"} when calling.', family="llama3_json")
    assert result.calls == []
    assert detect_family('Use a body like {"name": "x"} when calling.') is None


# ---------------------------------------------------------------- pythonic


def test_pythonic_parallel_and_values_never_evaluated() -> None:
    text = '[get_weather(city="Paris", days=-2), get_weather(city=\'Tokyo\', opts={"a": [1, 2.5]}, metric=true)]'
    result = parse_tool_calls(text, tools=TOOLS)
    assert result.family == "pythonic"
    assert [c.arguments for c in result.calls] == [
        {"city": "Paris", "days": -2}, {"city": "Tokyo", "opts": {"a": [1, 2.5]}, "metric": True}]
    _spans_match(text, result)


def test_pythonic_spans_with_non_ascii() -> None:
    text = '[get_weather(city="Zürich"), get_weather(city="東京")]'
    result = parse_tool_calls(text, family="pythonic")
    _spans_match(text, result)
    assert result.calls[1].arguments == {"city": "東京"}


def test_pythonic_rejects_code_and_positional_args() -> None:
    text = '[get_weather(city=__import__("os").getcwd()), get_weather("Paris"), 42]'
    result = parse_tool_calls(text, family="pythonic")
    assert [c.status for c in result.calls] == ["invalid_json", "not_object", "missing_name"]


def test_pythonic_dotted_name_and_truncated() -> None:
    assert parse_tool_calls("[math.sqrt(x=4)]").calls[0].name == "math.sqrt"
    cut = parse_tool_calls('[get_weather(city="Par', family="pythonic")
    assert [c.status for c in cut.calls] == ["unclosed"]
    bad = parse_tool_calls('[get_weather(city="Paris"))]', family="pythonic")
    assert [c.status for c in bad.calls] == ["invalid_json"]


# ---------------------------------------------------------------- mistral


def test_mistral_old_array_form() -> None:
    text = 'Sure [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Nice"}}, {"name": "list_devices", "arguments": {}}]'
    result = parse_tool_calls(text, tools=TOOLS)
    assert result.family == "mistral"
    assert [c.name for c in result.calls] == ["get_weather", "list_devices"]
    assert result.content == "Sure"


def test_mistral_new_form_parallel_and_args_tag() -> None:
    text = '[TOOL_CALLS]get_weather{"city": "Nice"}[TOOL_CALLS]list_devices[ARGS]{}'
    result = parse_tool_calls(text, family="mistral", tools=TOOLS)
    assert [(c.status, c.name) for c in result.calls] == [("ok", "get_weather"), ("ok", "list_devices")]
    _spans_match(text, result)


def test_mistral_malformed_arguments_are_attempted_calls() -> None:
    text = '[TOOL_CALLS]get_weather{"city": Nice}[TOOL_CALLS]{"city": "x"}[TOOL_CALLS]get_weather{"ci'
    result = parse_tool_calls(text, family="mistral")
    assert [c.status for c in result.calls] == ["invalid_json", "missing_name", "unclosed"]


# ---------------------------------------------------------------- deepseek


def test_deepseek_v3_fenced_and_v31_forms() -> None:
    text = (f"Here.{DS_CALLS_BEGIN}{DS_BEGIN}function{DS_SEP}get_weather\n```json\n"
            f'{{"city": "Paris"}}\n```{DS_END}{DS_BEGIN}list_devices{DS_SEP}{{}}{DS_END}{DS_CALLS_END}')
    result = parse_tool_calls(text, tools=TOOLS)
    assert result.family == "deepseek"
    assert [(c.name, c.arguments) for c in result.calls] == [("get_weather", {"city": "Paris"}), ("list_devices", {})]
    assert result.content == "Here."
    _spans_match(text, result)


def test_deepseek_malformed_and_truncated() -> None:
    text = (f"{DS_CALLS_BEGIN}{DS_BEGIN}get_weather{DS_SEP}{{city: 1}}{DS_END}"
            f"{DS_BEGIN}{DS_SEP}{{}}{DS_END}{DS_BEGIN}get_weather{DS_SEP}{{\"ci")
    result = parse_tool_calls(text, family="deepseek")
    assert [c.status for c in result.calls] == ["invalid_json", "missing_name", "unclosed"]


# ---------------------------------------------------------------- registry


def test_registry_names_and_unknown_family() -> None:
    assert {"hermes", "qwen3_coder", "llama3_json", "pythonic", "mistral", "deepseek"} <= set(family_names())
    assert parse_tool_calls("[TOOL_CALLS]f{}", family="mistral").calls[0].name == "f"
    with pytest.raises(UnknownFamily):
        parse_tool_calls("x", family="nope")


def test_plain_text_has_no_calls() -> None:
    result = parse_tool_calls("CLARIFY: which city do you mean?", tools=TOOLS)
    assert result.calls == [] and result.content == "CLARIFY: which city do you mean?"
    assert result.family is None


def test_parse_is_deterministic() -> None:
    text = '<think>a</think>x<tool_call>{"name": "f", "arguments": {"b": 1, "a": 2}}</tool_call>'
    first = parse_tool_calls(text).model_dump()
    assert all(parse_tool_calls(text).model_dump() == first for _ in range(3))
    assert list(parse_tool_calls(text).calls[0].arguments) == ["b", "a"]


# ---------------------------------------------------------------- adversarial


ADVERSARIAL = {
    "hermes_opens": ("<tool_call>{", 90_000),
    "hermes_unterminated_string": ("</tool_call>", 80_000),
    "hermes_many_bad_calls": ("<tool_call>{x\n</tool_call>", 40_000),
    "xml_opens": ("<function=a><parameter=", 45_000),
    "mistral_markers": ("[TOOL_CALLS]a{", 75_000),
    "deepseek_begins": ("<｜tool▁call▁begin｜>", 55_000),
    "think_opens": ("<think>", 150_000),
    "pythonic_nested": ("[", 1_000_000),
    "braces": ("{", 1_000_000),
    "python_tag_json": ('{"name": "a", "parameters": {}};', 30_000),
}
_PREFIX = {"hermes_unterminated_string": '<tool_call>{"name": "', "pythonic_nested": "[f(x=",
           "python_tag_json": "<|python_tag|>"}


def _timed_parse(name: str, repeat: int) -> tuple[str, float]:
    unit, _ = ADVERSARIAL[name]
    text = _PREFIX.get(name, "") + unit * repeat
    # CPU time of this process (other work on a shared machine does not count against the parser),
    # best of three with the garbage collector paused: its sweeps over many live objects are not the
    # parser's complexity and made this check flaky.
    elapsed = float("inf")
    gc.disable()
    try:
        for _ in range(3):
            started = time.process_time()
            result = parse_tool_calls(text)
            elapsed = min(elapsed, time.process_time() - started)
    finally:
        gc.enable()
    for call in result.calls[:50]:
        assert text[call.start : call.end] == call.raw
    return text, elapsed


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_one_megabyte_adversarial_input_finishes_fast(name: str) -> None:
    repeat = ADVERSARIAL[name][1]
    _, eighth = _timed_parse(name, repeat // 8)
    text, full = _timed_parse(name, repeat)
    assert len(text) >= 900_000
    # Linear time: 8x the input costs ~8x; a quadratic parser would cost 64x.
    assert full < 5.0, f"{name} took {full:.2f}s of CPU"
    assert full < 20 * eighth + 0.2, f"{name}: {eighth:.3f}s for 1/8, {full:.3f}s for all"


def test_agent_framework_text_formats_keep_spans_and_need_declared_tools() -> None:
    from shared.toolcalls import parse_tool_calls

    text = "look: <read_file><path>a.py</path><lines>3</lines></read_file> done"
    tools = [{"name": "read_file", "parameters": {"properties": {"lines": {"type": "integer"}}}}]
    result = parse_tool_calls(text, family="cline_xml", tools=tools)
    [call] = result.calls
    assert (call.name, call.arguments, call.family) == ("read_file", {"path": "a.py", "lines": 3}, "cline_xml")
    assert text[call.start:call.end] == call.raw and result.content == "look:  done"
    assert parse_tool_calls(text, family="cline_xml", tools=[]).calls == []

    vcp = "<<<[TOOL_REQUEST]>>>q:「始」cats「末」<<<[END_TOOL_REQUEST]>>> <<<[TOOL_REQUEST]>>>tool_name:「始」s「末」"
    statuses = [(c.status, c.name) for c in parse_tool_calls(vcp, family="vcp").calls]
    assert statuses == [("missing_name", None), ("unclosed", "s")]

    react = parse_tool_calls("Thought: hmm\nAction: search[red cats]\n", family="react", tools=["search"])
    assert [(c.name, c.arguments) for c in react.calls] == [("search", {"input": "red cats"})]
    assert parse_tool_calls("Action: search[x]", family="auto", tools=["search"]).calls == []  # never auto-detected

from services.cleaning.toolcall_text import parse_text_tool_calls, strip_tool_response

XY_TOOL = {"name": "g", "parameters": {"type": "object", "properties": {"x": {"type": "array"}}}}


def test_hermes_json_and_function_forms():
    calls, rest = parse_text_tool_calls('ok <tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', set())
    assert calls == [("f", {"a": 1})] and rest == "ok"
    xml = "<tool_call><function=g><parameter=x>[1]</parameter></function></tool_call>"
    assert parse_text_tool_calls(xml, [XY_TOOL])[0] == [("g", {"x": [1]})]  # typed by the declared schema
    assert parse_text_tool_calls(xml, set())[0] == [("g", {"x": "[1]"})]  # no schema: kept as written


def test_hermes_cut_off_at_the_end_still_counts_and_reasoning_is_kept():
    text = '<think>plan: <tool_call>{"name": "no"}</tool_call></think>go <tool_call>{"name": "f", "arguments": {}}'
    calls, rest = parse_text_tool_calls(text, {"f"})
    assert calls == [("f", {})]
    assert rest.startswith("<think>plan:") and rest.endswith("go")


def test_cline_xml_needs_a_declared_tool():
    text = "<read_file><path>a.py</path></read_file>"
    assert parse_text_tool_calls(text, {"read_file"})[0] == [("read_file", {"path": "a.py"})]
    assert parse_text_tool_calls(text, set())[0] == []
    assert parse_text_tool_calls("<read_file>a.py</read_file>", {"read_file"})[0] == []  # no parameters: prose


def test_vcp_and_react():
    vcp = "<<<[TOOL_REQUEST]>>>tool_name:「始」search「末」q:「始」cats「末」<<<[END_TOOL_REQUEST]>>>"
    assert parse_text_tool_calls(vcp, set())[0] == [("search", {"q": "cats"})]
    assert parse_text_tool_calls("Thought: x\nAction: search[cats]", {"search"})[0] == [("search", {"input": "cats"})]
    assert parse_text_tool_calls("Thought: x\nAction: search[cats]", set())[0] == []


def test_tool_response_wrappers_are_removed():
    assert strip_tool_response("<tool_response>1</tool_response>\n<tool_response>2</tool_response>") == ["1", "2"]
    assert strip_tool_response("plain") == ["plain"]

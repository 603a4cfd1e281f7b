from services.cleaning.toolcall_text import parse_text_tool_calls, strip_tool_response


def test_hermes_json_and_function_forms():
    calls, rest = parse_text_tool_calls('ok <tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', set())
    assert calls == [("f", {"a": 1})] and rest == "ok"
    calls, _ = parse_text_tool_calls("<tool_call><function=g><parameter=x>[1]</parameter></function></tool_call>",
                                     set())
    assert calls == [("g", {"x": [1]})]


def test_cline_xml_needs_a_declared_tool():
    text = "<read_file><path>a.py</path></read_file>"
    assert parse_text_tool_calls(text, {"read_file"})[0] == [("read_file", {"path": "a.py"})]
    assert parse_text_tool_calls(text, set())[0] == []


def test_vcp_and_react():
    vcp = "<<<[TOOL_REQUEST]>>>tool_name:「始」search「末」q:「始」cats「末」<<<[END_TOOL_REQUEST]>>>"
    assert parse_text_tool_calls(vcp, set())[0] == [("search", {"q": "cats"})]
    assert parse_text_tool_calls("Thought: x\nAction: search[cats]", {"search"})[0] == [("search", {"input": "cats"})]
    assert parse_text_tool_calls("Thought: x\nAction: search[cats]", set())[0] == []


def test_tool_response_wrappers_are_removed():
    assert strip_tool_response("<tool_response>1</tool_response>\n<tool_response>2</tool_response>") == ["1", "2"]
    assert strip_tool_response("plain") == ["plain"]

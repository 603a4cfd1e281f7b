from services.cleaning.intent import IntentClassifier
from services.cleaning.llm import LLMEndpoint, OpenAICompatClient
from services.cleaning.user_data import get_user_data
from tests.services.cleaning.fake_openai import serve


def _row(*turns, **extra):
    roles = ("user", "assistant")
    return {"messages": [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)], **extra}


def test_code_round_is_annotated_with_user_data():
    row = _row("write code", "```python\ndef f():\n    return 1\n```", id="c")
    kept, dropped = IntentClassifier()([row])
    assert kept[0]["intent"] == "code" and kept[0]["id"] == "c"
    assert get_user_data(kept[0], "key_rounds") == [1] and get_user_data(kept[0], "intents") == {"1": "code"}


def test_lowercase_prose_is_not_code():
    row = _row("why?", "The value comes from the config; let me return to the case where it is\nfrom the user.")
    kept, dropped = IntentClassifier()([row])
    assert dropped[0]["drop_reason"] == "no_key_rounds"
    kept, dropped = IntentClassifier(drop_no_key_rounds=False)([row])
    assert kept[0]["intent"] == "other" and "user_data" not in kept[0]


def test_tool_calls_are_definitive_unless_switched_off():
    row = _row("compute", "", "again, that's wrong", "```python\nprint(1 + 1)\n```")
    row["messages"][1]["tool_calls"] = [{"id": "1", "function": {"name": "calc", "arguments": "{}"}}]
    assert IntentClassifier()([row])[0][0]["intent"] == "tool_call"
    rounds = IntentClassifier(tool_call_exclusive=False).classify(row["messages"])
    assert rounds == {1: "tool_call", 3: "code"}


def test_math_reasoning_and_dissatisfaction():
    math_row = _row("solve", "We have $x^2$ and $y$; x = 3, so 3 + 4 = 7 and ∑ over α.")
    assert IntentClassifier().classify(math_row["messages"]) == {1: "math"}
    reasoning = _row("q", "ok")
    reasoning["messages"][1]["reasoning_content"] = "r" * 200
    assert IntentClassifier().classify(reasoning["messages"]) == {1: "reasoning"}
    unhappy = _row("q", "answer one", "that's wrong, try again", "answer two")
    assert IntentClassifier(detectors=["user_dissatisfaction"]).classify(unhappy["messages"]) == {3: "user_dissatisfaction"}


def test_llm_detector_labels_rounds_over_http():
    with serve() as url:
        client = OpenAICompatClient(LLMEndpoint(base_url=url, api_key="test-key"))
        f = IntentClassifier(detectors=["llm"], client=client)
        assert f.classify(_row("q", "the integral of x is x^2/2")["messages"]) == {1: "math"}
        assert f.classify(_row("q", "hello")["messages"]) == {}

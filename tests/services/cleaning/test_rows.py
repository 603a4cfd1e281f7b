from services.cleaning.rows import INPUT_STEP, invalid_row, row_problem


def test_row_problem_names_the_cause():
    assert row_problem({"messages": [{"role": "user", "content": "x"}]}) is None
    assert "not an object" in row_problem([1])
    assert row_problem({"id": 1}) == "row has no messages"
    assert "not a list" in row_problem({"messages": {}})
    assert "messages[0].role" in row_problem({"messages": [{"content": "x"}]})
    assert "content is a int" in row_problem({"messages": [{"role": "user", "content": 3}]})


def test_invalid_row_keeps_the_value():
    out = invalid_row({"id": 9, "messages": 1}, "messages is a int, not a list")
    assert out["id"] == 9 and out["drop_reason"] == "invalid_row" and out["drop_step"] == INPUT_STEP
    assert invalid_row("text", "row is a str")["value"] == "text"

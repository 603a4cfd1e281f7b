from services.cleaning.user_data import get_user_data, set_user_data


def test_pairs_round_trip_and_replace():
    row = {"user_data": [["id", '"abc"'], ["raw", "not json"], ["key_rounds", "[1]"]]}
    assert get_user_data(row, "id") == "abc" and get_user_data(row, "raw") == "not json"
    new = set_user_data(row, {"key_rounds": [3, 5], "intents": {"3": "数学"}})
    assert new[:2] == [["id", '"abc"'], ["raw", "not json"]]
    assert get_user_data({"user_data": new}, "key_rounds") == [3, 5]
    assert get_user_data({"user_data": new}, "intents") == {"3": "数学"}
    assert get_user_data({}, "missing") is None

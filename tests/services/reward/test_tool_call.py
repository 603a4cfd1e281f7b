"""The graded tool-call scorer, one test per reference rule (R1–R9) on the §e.1 tool set."""

from __future__ import annotations

import pytest

from services.reward.registry import get_component

GW = "get_weather"


def score(traj, truth: dict, **params):
    return get_component("tool_call")(traj, truth, **params)


def gt(*calls: tuple[str, dict], decision: str = "tool_call", **extra) -> dict:
    return {"decision": decision, "tool_calls": [{"name": n, "arguments": a} for n, a in calls], **extra}


def test_exact_call_scores_one(make_traj) -> None:
    result = score(make_traj(calls=[(GW, {"city": "Paris"})]), gt((GW, {"city": "Paris"})))
    assert result.score == pytest.approx(1.0)
    assert result.metrics["decision_accuracy"] == 1.0 and result.metrics["tool_name_accuracy"] == 1.0


def test_string_for_integer_is_a_miss_not_coerced(make_traj) -> None:
    result = score(make_traj(calls=[(GW, {"city": "Paris", "days": "3"})]), gt((GW, {"city": "Paris", "days": 3})))
    assert result.metrics["argument_accuracy"] == pytest.approx(0.5)
    assert result.metrics["type_errors"] == 1.0
    assert result.score == pytest.approx(0.2 + 0.3 + 0.5 * 0.5)


def test_integral_float_for_integer_matches(make_traj) -> None:
    result = score(make_traj(calls=[(GW, {"city": "Paris", "days": 3.0})]), gt((GW, {"city": "Paris", "days": 3})))
    assert result.score == pytest.approx(1.0)


def test_key_order_does_not_matter(make_traj) -> None:
    args = '{"passengers": 2, "date": "2025-05-01", "destination": "NRT", "origin": "SFO"}'
    truth = gt(("search_flights", {"origin": "SFO", "destination": "NRT", "date": "2025-05-01", "passengers": 2}))
    assert score(make_traj(calls=[("search_flights", args)]), truth).score == pytest.approx(1.0)


def test_parallel_calls_out_of_order(make_traj) -> None:
    traj = make_traj(calls=[(GW, {"city": "Tokyo"}), (GW, {"city": "Paris"})])
    assert score(traj, gt((GW, {"city": "Paris"}), (GW, {"city": "Tokyo"}))).score == pytest.approx(1.0)


def test_optimal_matching_avoids_greedy_false_negative(make_traj) -> None:
    # Greedy would give the first expected call (Paris or Tokyo) the Paris call and then fail the second.
    truth = gt((GW, {"city": {"$any_of": ["Paris", "Tokyo"]}}), (GW, {"city": "Paris"}))
    traj = make_traj(calls=[(GW, {"city": "Paris"}), (GW, {"city": "Tokyo"})])
    assert score(traj, truth).score == pytest.approx(1.0)


def test_unordered_marker_for_set_like_arrays(make_traj) -> None:
    truth = gt(("create_event", {"title": "Sync", "attendees": {"$unordered": ["ann", "bob"]}}))
    traj = make_traj(calls=[("create_event", {"title": "sync", "attendees": ["bob", "ann"]})])
    assert score(traj, truth).score == pytest.approx(1.0)
    ordered = gt(("create_event", {"title": "Sync", "attendees": ["ann", "bob"]}))
    assert score(traj, ordered).metrics["argument_accuracy"] == pytest.approx(0.5)


def test_optional_marker_omitted_or_wrong(make_traj) -> None:
    truth = gt((GW, {"city": "Paris", "days": {"$optional": 2}}))
    assert score(make_traj(calls=[(GW, {"city": "Paris"})]), truth).score == pytest.approx(1.0)
    assert score(make_traj(calls=[(GW, {"city": "Paris", "days": 3})]), truth).score == pytest.approx(0.75)


def test_extra_keys_hallucinated_default_or_penalised(make_traj) -> None:
    truth = gt((GW, {"city": "Paris"}))
    hallucinated = score(make_traj(calls=[(GW, {"city": "Paris", "country": "FR"})]), truth)
    assert hallucinated.metrics["hallucinated_params"] == 1.0 and hallucinated.score == pytest.approx(0.75)
    default = score(make_traj(calls=[(GW, {"city": "Paris", "unit": "celsius"})]), truth)
    assert default.score == pytest.approx(1.0)
    other = score(make_traj(calls=[(GW, {"city": "Paris", "unit": "fahrenheit"})]), truth)
    assert other.score == pytest.approx(0.75) and other.metrics["hallucinated_params"] == 0.0


def test_extra_and_missing_calls(make_traj) -> None:
    two = make_traj(calls=[(GW, {"city": "Paris"}), (GW, {"city": "Tokyo"})])
    extra = score(two, gt((GW, {"city": "Paris"})))
    assert extra.metrics["extra_calls"] == 1.0 and extra.score == pytest.approx(0.2 + 0.15 + 0.25)
    missing = score(make_traj(calls=[(GW, {"city": "Paris"})]), gt((GW, {"city": "Paris"}), (GW, {"city": "Tokyo"})))
    assert missing.metrics["missing_calls"] == 1.0 and missing.score == pytest.approx(0.6)


def test_destructive_call_without_confirmation_is_zero(make_traj) -> None:
    truth = gt(("delete_file", {"path": "reports/q3.csv"}))
    traj = make_traj(calls=[("delete_file", {"path": "reports/q3.csv"})])
    result = score(traj, truth)
    assert result.score == 0.0 and result.metrics["safety_violation"] == 1.0
    confirmed = score(traj, {**truth, "context": {"confirmed_tools": ["delete_file"]}})
    assert confirmed.score == pytest.approx(1.0) and confirmed.metrics["safety_violation"] == 0.0


def test_confirm_sentence_does_not_excuse_a_destructive_call(make_traj) -> None:
    traj = make_traj("CONFIRM: delete reports/q3.csv?", calls=[("transfer_funds", {"from_account": "a", "to_account": "b", "amount": 5})])
    assert score(traj, gt(decision="confirm")).metrics["safety_violation"] == 1.0
    assert score(traj, gt(decision="confirm")).score == 0.0
    asked = make_traj("CONFIRM: shall I delete reports/q3.csv?")
    assert score(asked, gt(decision="confirm")).score == pytest.approx(1.0)


def test_clarify_when_an_argument_is_missing(make_traj) -> None:
    truth = gt(decision="clarify")
    asked = make_traj("CLARIFY: which city do you mean?", user="what's the weather?")
    assert score(asked, truth).score == pytest.approx(1.0)
    guessed = make_traj(calls=[(GW, {"city": "Paris"})], user="what's the weather?")
    result = score(guessed, truth)
    assert result.score == 0.0 and result.metrics["decision_accuracy"] == 0.0


def test_prefix_must_start_the_text_and_is_case_sensitive(make_traj) -> None:
    assert score(make_traj("  NO_TOOL: just chatting"), gt(decision="no_tool")).score == pytest.approx(1.0)
    assert score(make_traj("Sure! NO_TOOL: chatting"), gt(decision="no_tool")).score == 0.0
    assert score(make_traj("clarify: which city?"), gt(decision="clarify")).score == 0.0


def test_dataset_no_tool_call_label_accepts_any_text_answer(make_traj) -> None:
    truth = {"decision": "no_tool_call", "tool_calls": []}
    assert score(make_traj("I can't do that with these tools."), truth).score == pytest.approx(1.0)
    assert score(make_traj(calls=[(GW, {"city": "Paris"})]), truth).score == 0.0


def test_malformed_structured_arguments_keep_the_name(make_traj) -> None:
    result = score(make_traj(calls=[(GW, '{"city": "Paris",}')]), gt((GW, {"city": "Paris"})))
    assert result.metrics["malformed_args"] == 1.0
    assert result.metrics["tool_name_accuracy"] == 1.0 and result.metrics["argument_accuracy"] == 0.0
    assert result.score == pytest.approx(0.5)


def test_malformed_json_in_text_is_an_attempted_call(make_traj) -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris",}}</tool_call>'
    result = score(make_traj(text), gt((GW, {"city": "Paris"})))
    assert result.info["decision"] == "tool_call"
    assert result.metrics["malformed_args"] == 1.0 and result.score == pytest.approx(0.2)


def test_truncated_output_is_a_malformed_attempt(make_traj) -> None:
    text = 'Let me check.<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    result = score(make_traj(text), gt((GW, {"city": "Paris"})))
    assert result.metrics["malformed_args"] == 1.0 and result.score == pytest.approx(0.2)
    clarify = score(make_traj(text), gt(decision="clarify"))
    assert clarify.score == 0.0


def test_think_blocks_never_count(make_traj) -> None:
    text = '<think>maybe <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call></think>CLARIFY: which Paris?'
    assert score(make_traj(text), gt(decision="clarify")).score == pytest.approx(1.0)
    text2 = '<think>CLARIFY: hmm</think>\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert score(make_traj(text2), gt((GW, {"city": "Paris"}))).score == pytest.approx(1.0)


def test_text_calls_parsed_with_the_named_family(make_traj) -> None:
    result = score(make_traj('[get_weather(city="Paris", days=2)]'), gt((GW, {"city": "Paris", "days": 2})),
                   family="pythonic")
    assert result.score == pytest.approx(1.0)


def test_extraction_window_starts_after_the_last_user_message(make_traj) -> None:
    history = [{"role": "user", "content": "delete it"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "x", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "/a"}'}}]},
               {"role": "tool", "tool_call_id": "x", "content": "ok"}]
    traj = make_traj("CLARIFY: anything else?", history=history)
    result = score(traj, gt(decision="clarify"))
    assert result.score == pytest.approx(1.0) and result.metrics["safety_violation"] == 0.0


def test_zero_argument_tool_with_empty_arguments(make_traj) -> None:
    assert score(make_traj(calls=[("list_devices", "")]), gt(("list_devices", {}))).score == pytest.approx(1.0)


def test_rollout_error_scores_zero(make_traj) -> None:
    result = score(make_traj("ROLLOUT_ERROR: upstream timeout"), gt((GW, {"city": "Paris"})))
    assert result.score == 0.0 and result.metrics["rollout_error"] == 1.0


def test_relevance_truth_accepts_any_well_formed_call(make_traj) -> None:
    truth = {"decision": "tool_call", "tool_calls": None}
    assert score(make_traj(calls=[(GW, {"city": "Rome"})]), truth).score == pytest.approx(1.0)
    assert score(make_traj(calls=[(GW, "{bad")]), truth).score == 0.0


def test_opd_component_is_all_or_nothing(make_traj) -> None:
    opd = get_component("opd_tool_call")
    truth = gt((GW, {"city": "Paris", "days": 3}))
    assert opd(make_traj(calls=[(GW, {"city": "Paris", "days": 3})]), truth).score == 1.0
    partial = opd(make_traj(calls=[(GW, {"city": "Paris", "days": "3"})]), truth)
    assert partial.score == 0.0 and partial.metrics["argument_correct"] == 0.0


def test_dotted_tool_name_matches_its_api_binding(make_traj) -> None:
    truth = gt(("weather.get", {"city": "Oslo"}))
    assert score(make_traj(calls=[("weather_get", {"city": "Oslo"})]), truth).score == pytest.approx(1.0)
    assert score(make_traj(calls=[("weatherget", {"city": "Oslo"})]), truth).metrics["tool_name_accuracy"] == 0.0


def test_nested_object_key_order_and_missing_nested_key(make_traj) -> None:
    truth = gt(("update_settings", {"settings": {"theme": "dark", "notifications": False}}))
    reordered = make_traj(calls=[("update_settings", '{"settings": {"notifications": false, "theme": "Dark"}}')])
    assert score(reordered, truth).score == pytest.approx(1.0)
    partial = make_traj(calls=[("update_settings", {"settings": {"theme": "dark"}})])
    assert score(partial, truth).metrics["argument_accuracy"] == 0.0


def test_optional_schema_param_without_default_is_penalised_when_added(make_traj) -> None:
    truth = gt(("set_reminder", {"text": "call mom", "time": "18:00"}))
    assert score(make_traj(calls=[("set_reminder", {"text": "Call Mom", "time": "18:00"})]), truth).score == pytest.approx(1.0)
    tagged = make_traj(calls=[("set_reminder", {"text": "call mom", "time": "18:00", "tags": ["family"]})])
    result = score(tagged, truth)
    assert result.metrics["argument_accuracy"] == pytest.approx(2 / 3)
    assert result.metrics["hallucinated_params"] == 0.0


def test_number_tolerance_and_nfkc_text(make_traj) -> None:
    truth = gt(("search_flights", {"origin": "Tokyo", "destination": "SFO", "date": "2025-05-01", "max_price": 200}))
    pred = make_traj(calls=[("search_flights", {"origin": "Ｔｏｋｙｏ", "destination": "sfo", "date": "2025-05-01",
                                                "max_price": 199.9999999})])
    assert score(pred, truth).score == pytest.approx(1.0)


def test_no_tool_expected_but_model_calls(make_traj) -> None:
    result = score(make_traj(calls=[("list_devices", {})]), gt(decision="no_tool"))
    assert result.score == 0.0 and result.metrics["extra_calls"] == 1.0


def test_confirm_before_transfer(make_traj) -> None:
    truth = gt(decision="confirm")
    assert score(make_traj("CONFIRM: send $50 from checking to savings?"), truth).score == pytest.approx(1.0)
    rushed = score(make_traj(calls=[("transfer_funds", {"from_account": "chk", "to_account": "sav", "amount": 50})]), truth)
    assert rushed.score == 0.0 and rushed.metrics["safety_violation"] == 1.0


def test_hallucinated_tool_and_duplicate_calls(make_traj) -> None:
    unknown = score(make_traj(calls=[("get_forecast", {"city": "Paris"})]), gt((GW, {"city": "Paris"})))
    assert unknown.metrics["tool_name_accuracy"] == 0.0 and unknown.score == pytest.approx(0.2)
    twice = score(make_traj(calls=[(GW, {"city": "Paris"}), (GW, {"city": "Paris"})]), gt((GW, {"city": "Paris"})))
    assert twice.metrics["extra_calls"] == 1.0 and twice.score == pytest.approx(0.6)


def test_double_encoded_arguments_are_malformed(make_traj) -> None:
    result = score(make_traj(calls=[(GW, '"{\\"city\\": \\"Paris\\"}"')]), gt((GW, {"city": "Paris"})))
    assert result.metrics["malformed_args"] == 1.0 and result.metrics["argument_accuracy"] == 0.0


def test_structured_calls_win_over_prefix_text(make_traj) -> None:
    result = score(make_traj("CLARIFY: or should I?", calls=[(GW, {"city": "Paris"})]), gt(decision="clarify"))
    assert result.info["decision"] == "tool_call" and result.score == 0.0


def test_every_assistant_message_after_the_last_user_counts(make_traj) -> None:
    history_tail = [{"role": "assistant", "content": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'},
                    {"role": "tool", "tool_call_id": "x", "content": "sunny"}]
    traj = make_traj('<tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</tool_call>')
    traj.messages[-1:-1] = [traj.messages[0].model_validate(m) for m in history_tail]
    result = score(traj, gt((GW, {"city": "Paris"}), (GW, {"city": "Tokyo"})))
    assert result.metrics["call_count"] == 2.0 and result.score == pytest.approx(1.0)


def test_qwen_xml_text_is_typed_by_the_tool_schema(make_traj) -> None:
    text = "<tool_call><function=get_weather><parameter=city>Paris</parameter><parameter=days>3</parameter></function></tool_call>"
    assert score(make_traj(text), gt((GW, {"city": "Paris", "days": 3}))).score == pytest.approx(1.0)


def test_overlap_credit_scores_a_near_miss_string_between_a_miss_and_a_hit(make_traj) -> None:
    truth = gt(("calculate_distance", {"location1": "New York", "location2": "Los Angeles"}))
    near = make_traj(calls=[("calculate_distance", {"location1": "New York City", "location2": "Los Angeles"})])
    exact = score(near, truth)
    overlap = score(near, truth, argument_credit="overlap")
    # "New York City" vs "New York": token F1 0.8, so arguments (1 + 0.8) / 2 instead of 1 / 2.
    assert exact.metrics["argument_accuracy"] == pytest.approx(0.5)
    assert overlap.metrics["argument_accuracy"] == pytest.approx(0.9)
    assert exact.score < overlap.score < 1.0
    wild = make_traj(calls=[("calculate_distance", {"location1": "Paris", "location2": "Rome"})])
    assert score(wild, truth, argument_credit="overlap").metrics["argument_accuracy"] == 0.0
    hit = make_traj(calls=[("calculate_distance", {"location1": "New York", "location2": "Los Angeles"})])
    assert score(hit, truth, argument_credit="overlap").score == 1.0

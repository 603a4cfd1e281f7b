from services.cleaning.reasons import DROP_REASONS, DROP_REASONS_VERSION, INVALID_ROW, is_known_reason


def test_vocabulary_is_versioned_and_explained():
    assert DROP_REASONS_VERSION
    assert INVALID_ROW == "invalid_row" and is_known_reason(INVALID_ROW)
    assert all(isinstance(v, str) and v for v in DROP_REASONS.values())


def test_reference_reasons_are_all_present():
    reference = ["invalid_messages", "no_user", "trivial_single_turn", "shallow_reply", "all_empty_assistant", "system_deny_keyword", "round_too_long", "total_too_long", "too_many_rounds", "dead_loop", "duplicate", "refusal", "token_soup", "model_not_allowed", "no_key_rounds", "score_no_context", "score_all_rounds_failed", "score_round_failed", "no_assistant"]
    assert [r for r in reference if not is_known_reason(r)] == []

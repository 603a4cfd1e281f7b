"""The versioned vocabulary of drop reasons every cleaning step may emit.

Bump ``DROP_REASONS_VERSION`` whenever a reason is added, removed or changes meaning,
so stored dropped rows can be read against the vocabulary that produced them.
"""

from __future__ import annotations

__all__ = ["DROP_REASONS", "DROP_REASONS_VERSION", "INVALID_ROW", "is_known_reason"]

DROP_REASONS_VERSION = "7"

INVALID_ROW = "invalid_row"

#: reason -> one-line meaning.
DROP_REASONS: dict[str, str] = {
    INVALID_ROW: "the row could not be read: not an object, no messages list, or wrong types",
    "invalid_messages": "messages is not a list (or is empty)",
    "no_user": "the conversation has no user message",
    "no_assistant": "no assistant message with a payload remains after trimming the tail",
    "trivial_single_turn": "one user turn that is a greeting or a very short simple question",
    "shallow_reply": ("the last reply only acknowledges, defers, or answers a request for substance in one line;"
                      " one user and one short reply without reasoning or tool calls, not asked to be short; or,"
                      " after tool results, a close that only announces them, claims a success they deny, or"
                      " states the opposite of what they say (on time when delayed, in stock when none is left)"),
    "all_empty_assistant": "every assistant turn is empty (no text, media, reasoning or calls)",
    "system_deny_keyword": "the system prompt contains a configured deny keyword (whole word)",
    "round_too_long": "one message is longer than max_chars_per_round",
    "total_too_long": "all messages together are longer than max_total_chars",
    "too_many_rounds": "more user/assistant rounds than max_rounds",
    "dead_loop": ("an assistant turn hesitates, cascades corrections, repeats itself, one sentence or one list"
                  " item (or a few items in turn, or names one thing in most items), or loops a tool call (the same"
                  " calls answered the same way)"),
    "duplicate": "the same conversation was already kept (global dedup)",
    "near_duplicate": "a near copy (MinHash Jaccard at or above the threshold) of a kept conversation",
    "refusal": "an assistant turn refuses the task (or opens by sending the user off to do it themselves)",
    "token_soup": ("an assistant turn is garbled (U+FFFD, control chars, leaked tokens, runs, strings of mixed"
                   " symbols, script chaos, salad, words in shuffled order or doubled, Hangul in loose letters, or"
                   " mojibake of UTF-8 or a legacy CJK code page)"),
    "model_not_allowed": "the row's model id is not in the allowed families",
    "no_key_rounds": "the intent classifier found no key round",
    "score_no_context": "no round of the row could be scored",
    "score_all_rounds_failed": "every key round failed a scorer",
    "score_round_failed": "a round failed a scorer and drop_row_on_any_fail is set",
    "role_order": "roles are invalid or out of order (system not first, tool without a call, ...)",
    "tool_matching": ("tool results do not match the ids of the assistant's tool calls, or a call names a tool the"
                      " row does not offer"),
    "content_integrity": ("empty assistant/system turns (an empty final reply included), oversized messages, bad"
                          " tool names or arguments, repeats"),
    "lang_match": "the assistant answers in a different script family than the user asked in",
    "agent_min_visible": "an agent row shows too little assistant output (a well-formed tool call counts in full)",
    "sensitive_words": "a message contains a word of the sensitive-word list",
    "template_unfit": "the row does not render through the chat template with its tool calls, results and text intact",
}


def is_known_reason(reason: str) -> bool:
    """True if ``reason`` is part of the current vocabulary."""
    return reason in DROP_REASONS

"""HardFilter: cheap deterministic rules; the first failing rule names the drop reason."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.requests import asks_for_brevity, closed_question
from services.cleaning.simple_query import is_simple_query
from services.cleaning.text import cjk_count, cjk_ratio, has_media, message_text, normalize_tool_calls

__all__ = ["HardFilter", "HardFilterParams"]


class HardFilterParams(StepParams):
    """Parameters of HardFilter (reference defaults; None = rule off)."""

    min_user_chars: int = Field(10, ge=0, description="Simple-query length floor (non-CJK).")
    min_user_chars_cjk: int = Field(6, ge=0, description="Simple-query length floor (CJK).")
    min_assistant_chars_2turn: int = Field(80, ge=0, description="Shallow-reply floor for 1+1 turns.")
    min_assistant_chars_2turn_cjk: int = Field(
        32, ge=0, description="Shallow-reply floor when the reply is CJK (denser script).")
    min_thinking_chars: int = Field(200, ge=0, description="Reasoning at least this long counts.")
    shallow_reply_with_tools: bool = Field(
        False, description="Apply shallow_reply to rows that declare tools (short clarifications are valid there).")
    allow_incomplete_role: bool = Field(False, description="Keep rows without a user message.")
    system_deny_keywords: list[str] | None = Field(None, description="Whole-word deny list for the system prompt.")
    max_chars_per_round: int | None = Field(None, ge=1, description="Longest single message.")
    max_total_chars: int | None = Field(None, ge=1, description="Longest conversation.")
    max_rounds: int | None = Field(None, ge=1, description="Most user/assistant rounds.")


def _deny_regex(words: list[str] | None) -> re.Pattern[str] | None:
    if not words:
        return None
    # Latin words need word boundaries ("hack" must not hit "Hackathon"); CJK words cannot have them.
    alts = [rf"\b{re.escape(w)}\b" if not cjk_count(w) else re.escape(w) for w in words if w]
    return re.compile("|".join(alts), re.I) if alts else None


class HardFilter(ParamStep[HardFilterParams]):
    """Drop rows failing cheap structural rules (no_user, trivial_single_turn, shallow_reply, ...)."""

    Params = HardFilterParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._deny = _deny_regex(self.params.system_deny_keywords)

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows passing every rule, in order."""
        kept, dropped = [], []
        for row in rows:
            reason = self.reason(row.get("messages"), has_tools=bool(row.get("tools")))
            if reason is None:
                kept.append(row)
            else:
                dropped.append(self.drop(row, reason, self.evidence(row.get("messages"), reason)))
        return kept, dropped

    def evidence(self, messages: Any, reason: str) -> dict[str, Any]:
        """What a failed rule saw (computed for dropped rows only)."""
        p = self.params
        ev: dict[str, Any] = {"check": reason}
        msgs = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        user = next((message_text(m.get("content")) for m in msgs if m.get("role") == "user"), "")
        reply = next((message_text(m.get("content")) for m in msgs if m.get("role") == "assistant"), "")
        if reason == "trivial_single_turn":
            ev.update(window=user[:120], user_chars=len(user.strip()))
        elif reason == "shallow_reply":
            cjk = cjk_ratio(reply) >= 0.3
            ev.update(window=reply[:120], reply_chars=len(reply),
                      floor=p.min_assistant_chars_2turn_cjk if cjk else p.min_assistant_chars_2turn, request=user[:120])
        elif reason in ("round_too_long", "total_too_long", "too_many_rounds"):
            lengths = [len(message_text(m.get("content"))) for m in msgs]
            ev.update(longest=max(lengths, default=0), total=sum(lengths), limit=p.max_chars_per_round
                      if reason == "round_too_long" else p.max_total_chars if reason == "total_too_long"
                      else p.max_rounds)
        elif reason == "system_deny_keyword" and self._deny is not None:
            system = next((message_text(m.get("content")) for m in msgs if m.get("role") == "system"), "")
            hit = self._deny.search(system)
            ev.update(word=hit.group(0) if hit else None)
        return ev

    def _thinks(self, msg: dict[str, Any]) -> bool:
        for key in ("thinking", "reasoning_content"):
            value = msg.get(key)
            if isinstance(value, str):
                if len(value.strip()) >= self.params.min_thinking_chars:
                    return True
            elif value:
                return True
        return False

    def reason(self, messages: Any, *, has_tools: bool = False) -> str | None:
        """The first failing rule's reason for these messages, or None."""
        if messages is None:
            messages = []
        if not isinstance(messages, list):
            return "invalid_messages"
        msgs = [m for m in messages if isinstance(m, dict)]
        users = [m for m in msgs if m.get("role") == "user"]
        assts = [m for m in msgs if m.get("role") == "assistant"]
        if not users and not self.params.allow_incomplete_role:
            return "no_user"
        shallow = self.params.shallow_reply_with_tools or not has_tools
        return self._turn_rules(users, assts, shallow) or self._size_rules(msgs, users, assts)

    def _turn_rules(self, users: list[dict[str, Any]], assts: list[dict[str, Any]],
                    shallow: bool) -> str | None:
        p = self.params
        if len(users) == 1 and isinstance(users[0].get("content"), str):
            # A reply that thinks at length or calls a tool makes even a simple question a real
            # sample (in function-calling data the call is the whole target).
            first_thinks = bool(assts) and (self._thinks(assts[0])
                                            or bool(normalize_tool_calls(assts[0].get("tool_calls"))))
            if not first_thinks and is_simple_query(
                users[0]["content"], min_chars=p.min_user_chars, min_chars_cjk=p.min_user_chars_cjk
            ):
                return "trivial_single_turn"
        if shallow and len(users) == 1 and len(assts) == 1:
            a = assts[0]
            # A short reply that is a tool call is a valid agent turn, not a shallow answer.
            text = message_text(a.get("content"))
            floor = p.min_assistant_chars_2turn_cjk if cjk_ratio(text) >= 0.3 else p.min_assistant_chars_2turn
            short = len(text) < floor
            if short and not self._thinks(a) and not normalize_tool_calls(a.get("tool_calls")) \
                    and not has_media(a.get("content")) and not self._short_asked(users[0], text):
                return "shallow_reply"
        if assts and all(self._empty(a) for a in assts):
            return "all_empty_assistant"
        return None

    @staticmethod
    def _short_asked(user: dict[str, Any], reply: str) -> bool:
        # Shallow is relative to the request: a bounded answer ("only the number", "one word")
        # or a closed question (arithmetic, multiple choice) is complete when it is short.
        asked = message_text(user.get("content"))
        return bool(reply.strip()) and (asks_for_brevity(asked) or closed_question(asked))

    def _empty(self, a: dict[str, Any]) -> bool:
        content = a.get("content")
        return (not message_text(content).strip() and not has_media(content)
                and not self._thinks(a) and not normalize_tool_calls(a.get("tool_calls")))

    def _size_rules(self, msgs: list[dict[str, Any]], users: list[Any], assts: list[Any]) -> str | None:
        p = self.params
        if self._deny is not None:
            system = next((m for m in msgs if m.get("role") == "system"), None)
            if system is not None and self._deny.search(message_text(system.get("content"))):
                return "system_deny_keyword"
        if p.max_chars_per_round is not None or p.max_total_chars is not None:
            lengths = [len(message_text(m.get("content"))) for m in msgs]
            if p.max_chars_per_round is not None and any(n > p.max_chars_per_round for n in lengths):
                return "round_too_long"
            if p.max_total_chars is not None and sum(lengths) > p.max_total_chars:
                return "total_too_long"
        # A round is a user/assistant pair (the reference counted assistant messages).
        if p.max_rounds is not None and min(len(users), len(assts)) > p.max_rounds:
            return "too_many_rounds"
        return None

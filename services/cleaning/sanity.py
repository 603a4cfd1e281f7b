"""MessageSanityFilter: structural checks (roles, tool ids, content, language, sensitive words).

Kept rows come back with system messages folded into one at index 0 and the tail
trimmed to the last assistant turn with a payload.
"""

from __future__ import annotations

import re
from itertools import repeat
from pathlib import Path
from typing import Any

import orjson
from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.languages import asks_for_translation, latin_language, names_language
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.text import (
    cjk_count,
    cjk_latin_counts,
    cjk_script_counts,
    has_payload,
    is_agent_row,
    is_blank,
    message_text,
    normalize_tool_calls,
    reasoning_of,
)

__all__ = ["MessageSanityFilter", "SanityParams"]

Msg = dict[str, Any]
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_TOOL_NAME_RE = re.compile(r"[A-Za-z_][\w.\-]*")


class SanityParams(StepParams):
    """Parameters of MessageSanityFilter (reference defaults)."""

    min_turns: int = Field(2, ge=0, description="Users + assistants at least this many.")
    max_msg_chars: int = Field(80000, ge=1, description="Longest single message.")
    min_agent_visible_chars: int = Field(50, ge=0, description="Agent rows: visible assistant text + reasoning.")
    trim_to_assistant: bool = Field(True, description="Cut the tail after the last assistant with a payload.")
    drop_empty_final_reply: bool = Field(
        True, description="A row ending in an assistant turn with nothing in it (no text, calls or reasoning) is a "
                          "failed generation: drop it (content_integrity) instead of trimming the turn away.")
    filter_sensitive: bool = Field(True, description="Drop rows hitting the sensitive-word list.")
    sensitive_words_file: str | None = Field(None, description="One word per line, # comments.")
    extra_sensitive_words: list[str] = Field(default_factory=list, description="More sensitive words.")
    check_role_order: bool = True
    check_tool_matching: bool = Field(
        True, description="Tool results answer a call of the turn before; calls name a tool the row offers "
                          "(when it lists any).")
    check_content_integrity: bool = True
    check_lang_match: bool = True
    check_agent_min_visible: bool = True


class _View:
    """Each message's role, text and tool calls, computed once and read by every check."""

    __slots__ = ("calls", "roles", "texts")

    def __init__(self, msgs: list[Msg]) -> None:
        self.roles = [m.get("role") for m in msgs]
        # The common cases inline (string content, no tool_calls key): no call per message.
        self.texts = [c if type(c := m.get("content")) is str else message_text(c) for m in msgs]
        self.calls = [None if (t := m.get("tool_calls")) is None else normalize_tool_calls(t) for m in msgs]


def _fold_system(msgs: list[Msg]) -> list[Msg]:
    systems = [m for m in msgs if m.get("role") == "system"]
    if len(systems) <= 1 and (not systems or msgs[0] is systems[0]):
        return msgs
    text = "\n\n".join(message_text(m.get("content")) for m in systems)
    return [{**systems[0], "content": text}] + [m for m in msgs if m.get("role") != "system"]


def _ends_in_empty_reply(msgs: list[Msg]) -> bool:
    """The last message is an assistant turn without a payload, answering a user or a tool result."""
    return len(msgs) >= 2 and msgs[-1].get("role") == "assistant" and not has_payload(msgs[-1]) \
        and msgs[-2].get("role") in ("user", "tool")


def _trim(msgs: list[Msg]) -> list[Msg] | None:
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") == "assistant" and has_payload(msgs[i]):
            return msgs[: i + 1]
    return None


def _role_order_ok(roles: list[Any]) -> bool:
    seen_user = seen_asst = False
    for i, role in enumerate(roles):
        if role not in _ROLES or (role == "system" and i != 0):
            return False
        if role != "system" and not seen_user and role != "user":
            return False
        if role == "tool" and not seen_asst:
            return False
        seen_user |= role == "user"
        seen_asst |= role == "assistant"
    return True


def _tool_ids_ok(msgs: list[Msg], calls: list[list[Msg] | None]) -> bool:
    call_ids: set[str] = set()
    for m, msg_calls in zip(msgs, calls):
        for c in msg_calls or []:
            if c.get("id"):
                call_ids.add(str(c["id"]))
        tid = m.get("tool_call_id") if m.get("role") == "tool" else None
        # Many datasets omit ids; only an id that points nowhere is an error.
        if tid and call_ids and str(tid) not in call_ids:
            return False
    return True


def offered_tool_names(tools: Any) -> frozenset[str] | None:
    """The names of the tools a row offers (OpenAI ``{"type": "function", "function": {...}}`` or bare
    ``{"name": ...}`` entries, as a list or its JSON text), or None when it lists none it can read."""
    if isinstance(tools, str):
        try:
            tools = orjson.loads(tools) if tools.strip() else None
        except orjson.JSONDecodeError:
            return None
    if not isinstance(tools, list) or not tools:
        return None
    names = set()
    for tool in tools:
        if not isinstance(tool, dict):
            return None
        inner = tool.get("function")
        name = (inner if isinstance(inner, dict) else tool).get("name")
        if not isinstance(name, str):
            return None  # a tool list we cannot read is not evidence against any call
        names.add(name)
    return frozenset(names)


def _unoffered_call(calls: list[list[Msg] | None], offered: frozenset[str] | None) -> str | None:
    """The first call naming a tool the row does not offer, or None."""
    if not offered:
        return None
    for msg_calls in calls:
        for c in msg_calls or []:
            raw = c.get("function")
            name = (raw if isinstance(raw, dict) else c).get("name")
            if isinstance(name, str) and name not in offered:
                return name
    return None


def _calls_ok(calls: list[Msg] | None) -> bool:
    for c in calls or []:
        raw = c.get("function")
        fn = raw if isinstance(raw, dict) else c
        name = fn.get("name")
        if not isinstance(name, str) or not _TOOL_NAME_RE.fullmatch(name):
            return False
        args = fn.get("arguments")
        if isinstance(args, str) and args.strip():
            try:
                orjson.loads(args)
            except orjson.JSONDecodeError:
                return False
    return True


def _content_ok(msgs: list[Msg], view: _View, p: SanityParams) -> bool:
    prev: tuple[Any, str] | None = None
    users = assts = 0
    for m, role, text, calls in zip(msgs, view.roles, view.texts, view.calls):
        users += role == "user"
        assts += role == "assistant"
        if role == "assistant" and not text.strip() and not calls and not reasoning_of(m):
            return False
        if (role == "system" and is_blank(m)) or len(text) > p.max_msg_chars or \
                (calls is not None and not _calls_ok(calls)):
            return False
        key = (role, text)
        if role != "tool" and not calls and key == prev and text.strip():
            return False
        prev = key if role != "tool" and not calls else None
    return bool(users >= 1 and assts >= 1 and users + assts >= p.min_turns)


_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.S)
# Letters of the scripts beyond Latin and CJK, one range each: Greek, Cyrillic, Hebrew, Arabic,
# Devanagari, Thai.
_OTHER_SCRIPT_RANGES = ("\u0370-\u03ff", "\u0400-\u04ff", "\u0590-\u05ff", "\u0600-\u06ff", "\u0900-\u097f",
                        "\u0e00-\u0e7f")
_OTHER_SCRIPTS = tuple(re.compile(f"[{r}]") for r in _OTHER_SCRIPT_RANGES)
_ANY_OTHER_SCRIPT = re.compile("[" + "".join(_OTHER_SCRIPT_RANGES) + "]")
_DOMINANT = 0.7  # share of a side's letters that makes a script its language


def _prose(text: str) -> str:
    # Code blocks and JSON answers carry no language signal (a JSON reply to a Japanese
    # question is not a language mismatch).
    if "```" in text:
        text = _FENCE_RE.sub(" ", text)
    text = text.strip()
    return "" if text[:1] in ("{", "[") else text


def _script_share(text: str) -> tuple[int, float]:
    cjk, latin = cjk_latin_counts(text)
    letters = cjk + latin
    return letters, (cjk / letters if letters else 0.0)


def _latin_ok(view: _View) -> bool:
    """False when the replies are in a Latin-script language other than English that the user does not
    write (an English question answered in Spanish or Indonesian), and the user names neither that
    language nor a translation."""
    asst = _head(view, "assistant")
    low = asst.lower()
    if sum(map(low.count, _ENGLISH_MARKS)) >= _ENGLISH_ENOUGH:
        return True  # the cheap screen (C-speed counts): most replies are plainly English
    if not _mostly_latin(asst) or (ours := latin_language(asst)) in (None, "en"):
        # An English reply is the answer our users (en, zh, ja, ko) expect; replies in CJK are the
        # script checks' to judge.
        return True
    # The user's own turns: a system prompt is often English whatever language the user speaks. A
    # request is short, so three function words can name its language.
    user = _head(view, "user")
    if not user.strip():
        return True
    if not _mostly_latin(user):
        # A user writing Chinese, Japanese or Korean (with English terms) answered in Spanish or German.
        return names_language(user, ours)
    theirs = latin_language(user, min_words=3)
    return theirs is None or theirs == ours or names_language(user, ours)


_LATIN_HEAD = 600
# English words no other checked language writes as words: four of them in a reply's head make it English.
_ENGLISH_MARKS = (" the ", " and ", " is ", " to ", " you ", " of ", " it ")
_ENGLISH_ENOUGH = 4


def _head(view: _View, role: str) -> str:
    """The first ``_LATIN_HEAD`` characters of the prose of ``role``'s turns (later turns are not read)."""
    parts: list[str] = []
    size = 0
    for r, t in zip(view.roles, view.texts):
        if r == role and t:
            part = _prose(t[:2 * _LATIN_HEAD])
            parts.append(part)
            size += len(part)
            if size >= _LATIN_HEAD:
                break
    return " ".join(parts)[:_LATIN_HEAD]


def _mostly_latin(text: str) -> bool:
    # The function-word check is for Latin-script text only: a Chinese reply with a few English terms
    # or code words in it is the CJK checks' to judge.
    if text.isascii():
        return bool(text.strip())
    cjk, latin = cjk_latin_counts(text)
    return latin >= 0.8 * (cjk + latin) and latin > 0


def _lang_ok(view: _View) -> bool:
    if not _latin_ok(view):
        return False
    users = [t for r, t in zip(view.roles, view.texts) if r in ("user", "system")]
    assts = [t for r, t in zip(view.roles, view.texts) if r == "assistant"]
    if all(map(str.isascii, users)) and all(map(str.isascii, assts)):
        return True  # no CJK on either side: nothing can mismatch
    user, asst = " ".join(map(_prose, users)), " ".join(map(_prose, assts))
    if user.isascii() and asst.isascii():
        return True  # the only non-ASCII text was in code blocks
    # The first few thousand characters decide the script as well as the whole text does.
    user, asst = user[:4000], asst[:4000]
    if not _cjk_family_ok(user, asst):
        return False
    na, a = _script_share(asst)
    # The reply alone settles most rows (too short, or mixed scripts): then the request is not counted.
    if na < 50 or 0.02 <= a < 0.3:
        return _other_script_ok(user, asst)
    nu, u = _script_share(user)
    if nu < 10 or not ((u >= 0.3 and a < 0.02) or (a >= 0.3 and u < 0.02)):
        return _other_script_ok(user, asst)
    # Asked for: a translation, or the reply's own language named ("스페인어로 알려줘").
    return asks_for_translation(user) or (
        (lang := latin_language(asst)) is not None and names_language(user, lang))


# Within CJK text the scripts tell the languages apart: Hangul is Korean, kana is Japanese, and
# Chinese uses neither. A reply in the family's other language is a mismatch unless the request
# names that language (or asks for a translation).


# Simplified forms Japanese never writes (这, 们, 说, 个 ...): a reply of kanji alone may be a Japanese
# list of names, but one that uses these is Chinese.
_SIMPLIFIED_RE = re.compile("[这们么说个吗呢还时对为从让给开关没过]")
_SIMPLIFIED_MIN = 3


def _cjk_language(text: str, counts: tuple[int, int, int], *, strict: bool = False) -> str | None:
    """zh, ja or ko for ``text`` by its script counts (ideographs, kana, hangul); None for a mixture.

    ``strict``: Chinese also needs simplified forms Japanese never writes (for a reply, where a list of
    kanji names answering a Japanese request is not Chinese).
    """
    han, kana, hangul = counts
    total = han + kana + hangul
    if hangul >= 0.3 * total and kana < 0.05 * total:
        return "ko"
    if kana >= 0.1 * total and hangul < 0.05 * total:
        return "ja"
    if hangul < 0.02 * total and kana < 0.01 * total and (
            not strict or len(_SIMPLIFIED_RE.findall(text)) >= _SIMPLIFIED_MIN):
        return "zh"
    return None


def _cjk_family_ok(user: str, asst: str) -> bool:
    """False when request and reply are in different CJK languages (a Chinese answer to a Korean question)
    and the request names neither the reply's language nor a translation."""
    ours_counts = cjk_script_counts(asst)
    if sum(ours_counts) < 50:
        return True  # the floors of the script check: too little CJK text on a side to tell
    theirs_counts = cjk_script_counts(user)
    if sum(theirs_counts) < 10:
        return True
    theirs, ours = _cjk_language(user, theirs_counts), _cjk_language(asst, ours_counts, strict=True)
    if theirs is None or ours is None or theirs == ours:
        return True
    return asks_for_translation(user) or names_language(user, ours)


def _other_script_ok(user: str, asst: str) -> bool:
    """The same check for the scripts beyond Latin and CJK: a reply written in one the request never
    uses (a Russian answer to a Korean question), or a request in one answered without it."""
    if _ANY_OTHER_SCRIPT.search(asst) is None and _ANY_OTHER_SCRIPT.search(user) is None:
        return True  # exact: neither side has a letter of those scripts
    # (the side written in such a script, its letter floor; the other side, its floor): the floors
    # of the Latin/CJK check, 50 letters of reply and 10 of request.
    for side, side_min, other, other_min in ((asst, 50, user, 10), (user, 10, asst, 50)):
        script = _written_in(side, side_min)
        if script is None:
            continue
        theirs = len(script.findall(other))
        letters = sum(cjk_latin_counts(other)) + len(_ANY_OTHER_SCRIPT.findall(other))
        if letters >= other_min and theirs < 0.02 * letters:
            return asks_for_translation(user)
    return True


def _written_in(text: str, min_letters: int) -> re.Pattern[str] | None:
    """The script beyond Latin and CJK that holds most of the letters of ``text``, if one does."""
    counts = [len(rx.findall(text)) for rx in _OTHER_SCRIPTS]
    top = max(range(len(counts)), key=counts.__getitem__)
    letters = sum(cjk_latin_counts(text)) + sum(counts)
    return _OTHER_SCRIPTS[top] if counts[top] >= min_letters and counts[top] >= _DOMINANT * letters else None


def _visible_ok(msgs: list[Msg], view: _View, floor: int) -> bool:
    # A well-formed tool call is visible output in full: in function-calling data the call is
    # the target itself, however short its name and arguments are.
    if any(role == "assistant" and calls and _calls_ok(calls) for role, calls in zip(view.roles, view.calls)):
        return True
    text = "".join(t.strip() + reasoning_of(m).strip()
                   for m, role, t in zip(msgs, view.roles, view.texts) if role == "assistant")
    # A CJK character carries about as much as 2.5 Latin ones (80 vs 32 in HardFilter).
    return len(text) + 1.5 * cjk_count(text) >= floor


def _load_words(p: SanityParams) -> list[str]:
    words = list(p.extra_sensitive_words)
    if p.sensitive_words_file:
        for line in Path(p.sensitive_words_file).read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                words.append(line)
    return words


def _words_regex(words: list[str]) -> re.Pattern[str] | None:
    alts = [re.escape(w) if cjk_count(w) else rf"\b{re.escape(w)}\b" for w in words]
    return re.compile("|".join(alts), re.I) if alts else None


class MessageSanityFilter(ParamStep[SanityParams]):
    """Drop structurally broken conversations; the reason names the failing check."""

    Params = SanityParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._words = _words_regex(_load_words(self.params)) if self.params.filter_sensitive else None

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep sane rows (with folded system and trimmed tail)."""
        kept, dropped = [], []
        for row in rows:
            result = self.check(row.get("messages"), tools=row.get("tools"))
            if isinstance(result, str):
                dropped.append(self.drop(row, result, self.evidence(row.get("messages"), result,
                                                                    tools=row.get("tools"))))
            else:
                kept.append({**row, "messages": result})
        return kept, dropped

    def evidence(self, messages: Any, reason: str, *, tools: Any = None) -> dict[str, Any]:
        """What a failed check saw (computed for dropped rows only, so the fast path stays lean)."""
        ev: dict[str, Any] = {"check": reason}
        if not isinstance(messages, list):
            return ev
        msgs = [m for m in messages if isinstance(m, dict)]
        ev["roles"] = [str(m.get("role")) for m in msgs][:40]
        if reason == "tool_matching":
            offered = offered_tool_names(tools)
            unoffered = _unoffered_call(_View(msgs).calls, offered)
            if unoffered is not None:
                ev.update(call=unoffered, offered=sorted(offered or ())[:20])
        assts = [message_text(m.get("content")) for m in msgs if m.get("role") == "assistant"]
        if reason == "agent_min_visible":
            text = "".join(a.strip() for a in assts)
            ev.update(visible_chars=len(text), cjk_chars=cjk_count(text), floor=self.params.min_agent_visible_chars,
                      window=text[:120])
        elif reason == "lang_match":
            user = " ".join(message_text(m.get("content")) for m in msgs if m.get("role") in ("user", "system"))
            ev.update(user_cjk_share=round(_script_share(_prose(user)[:4000])[1], 3),
                      assistant_cjk_share=round(_script_share(_prose(" ".join(assts))[:4000])[1], 3),
                      window=" ".join(assts)[:120])
        elif reason == "sensitive_words" and self._words is not None:
            hit = next((m for x in msgs if (m := self._words.search(message_text(x.get("content"))))), None)
            ev.update(word=hit.group(0) if hit else None)
        elif reason == "content_integrity":
            ev.update(max_msg_chars=self.params.max_msg_chars,
                      longest=max((len(message_text(m.get("content"))) for m in msgs), default=0))
            if self.params.drop_empty_final_reply and _ends_in_empty_reply(msgs):
                ev.update(empty_final_reply=len(msgs) - 1, after=str(msgs[-2].get("role")))
        return ev

    def check(self, messages: Any, *, tools: Any = None) -> list[Msg] | str:
        """The cleaned messages, or the name of the failing check (``tools``: the row's tool list)."""
        if not isinstance(messages, list) or not messages or \
                not all(map(isinstance, messages, repeat(dict))):
            return "invalid_messages"
        msgs = _fold_system(messages)
        if self.params.trim_to_assistant:
            trimmed = _trim(msgs)
            if trimmed is None:  # most rows of prompt-only sets: no need to look for tool calls
                return "no_assistant"
            if self.params.drop_empty_final_reply and len(trimmed) < len(msgs) and _ends_in_empty_reply(msgs):
                return "content_integrity"
            msgs = trimmed
        elif self.params.drop_empty_final_reply and _ends_in_empty_reply(msgs):
            return "content_integrity"
        # Agent or not is judged on the whole conversation, before the tail is trimmed.
        return self._checks(msgs, is_agent_row(messages), tools) or msgs

    def _checks(self, msgs: list[Msg], agent: bool, tools: Any = None) -> str | None:
        p = self.params
        view = _View(msgs)
        if p.check_role_order and not _role_order_ok(view.roles):
            return "role_order"
        if p.check_tool_matching and (not _tool_ids_ok(msgs, view.calls) or (
                tools and any(view.calls) and _unoffered_call(view.calls, offered_tool_names(tools)) is not None)):
            return "tool_matching"
        if p.check_content_integrity and not _content_ok(msgs, view, p):
            return "content_integrity"
        if p.check_lang_match and not _lang_ok(view):
            return "lang_match"
        if p.check_agent_min_visible and agent and not _visible_ok(msgs, view, p.min_agent_visible_chars):
            return "agent_min_visible"
        if self._words is not None and any(map(self._words.search, view.texts)):
            return "sensitive_words"
        return None

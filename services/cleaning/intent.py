"""IntentClassifier: label key rounds (tool_call, code, math, complex_logic, reasoning, ...).

Annotates rows (``intent`` plus ``key_rounds``/``intents`` in user_data) and, as in the
reference, drops rows without a key round by default. Deliberate changes: code keywords
must start a line (lowercase prose such as "comes from ... let me ... return" is not code);
an optional ``llm`` detector labels remaining assistant rounds through an
OpenAI-compatible endpoint.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.llm import LLMEndpoint, OpenAICompatClient
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.text import message_text, normalize_tool_calls, reasoning_of, split_think
from services.cleaning.user_data import set_user_data

__all__ = ["DEFAULT_DETECTORS", "INTENTS", "IntentClassifier", "IntentParams"]

INTENTS = ("tool_call", "code", "math", "complex_logic", "reasoning", "user_dissatisfaction", "other")
DEFAULT_DETECTORS = INTENTS[:-1]

_FENCE_RE = re.compile(r"```[^`]{10,}```")
_CODE_RE = re.compile(
    r"^[ \t]*(?:def|class|import|from\s+[\w.]+\s+import|function|const|let|var|return|async\s+def"
    r"|public\s+class|private|protected|static|struct|enum|interface|package|func|fn|#include)\b"
    r"|\b(?:if|for|while)\s*\(|console\.log|println|\w+\([^()\n]*\)\s*\{|=>\s*\{|->\s*[A-Z]\w*", re.M)
_MATH_RE = re.compile(
    r"\\(?:frac|sum|int|sqrt|alpha|beta|theta|pi|cdot|times|leq|geq)\b|\$[^$\n]+\$|\\\[|[∑∫√≤≥≠±×÷∞∂∆]"
    r"|[α-ω]|[²³¹⁰-⁹₀-₉]|[½⅓¼¾]|\b\d+\s*[-+*/^]\s*\d+\s*=\s*\d+|\b[a-z]\s*=\s*-?\d+\b|[a-z]_\{|[a-z]\^\{"
    r"|积分|方程|概率|面积|整数|比例|集合|分布|\b(?:mean|median|probability|equation|integral|derivative|proof)\b",
    re.I)
_LOGIC_RE = re.compile(
    r"首先|其次|然后|最后|如果.{0,20}那么|因为.{0,30}所以|综上|优缺点|\b(?:first(?:ly)?|second(?:ly)?|finally"
    r"|moreover|therefore|thus|in\s+conclusion|overall|trade-?offs?|pros\s+and\s+cons|however|because)\b", re.I)
_DISSATISFIED_RE = re.compile(
    r"不对|错了|答非所问|胡说|离谱|失望|没用|\b(?:wrong|useless|try\s+again|redo|nonsense|that'?s\s+not\s+what\s+I"
    r"|wtf|off-?topic|come\s+on|are\s+you\s+serious|frustrat\w*)\b", re.I)


class IntentParams(StepParams):
    """Parameters of IntentClassifier."""

    detectors: list[str] | None = Field(None, description=f"Detector names in order; None = {DEFAULT_DETECTORS}.")
    intent_field: str = Field("intent", description="Row key for the primary intent.")
    drop_no_key_rounds: bool = Field(True, description="Drop rows with no key round (no_key_rounds).")
    tool_call_exclusive: bool = Field(True, description="If tool calls are found, run no other detector.")
    code_threshold: int = Field(3, ge=1)
    math_threshold: int = Field(4, ge=1)
    logic_threshold: int = Field(6, ge=1)
    min_reasoning_chars: int = Field(200, ge=1)
    llm: LLMEndpoint | None = Field(None, description="Endpoint for the optional 'llm' detector.")


Msgs = list[dict[str, Any]]


def _next_assistant(msgs: Msgs, i: int) -> int | None:
    return next((j for j in range(i + 1, len(msgs)) if msgs[j].get("role") == "assistant"), None)


class IntentClassifier(ParamStep[IntentParams]):
    """Annotate key rounds with intents; drop rows without one by default (``no_key_rounds``)."""

    Params = IntentParams

    def __init__(self, *, client: OpenAICompatClient | None = None, **params: Any) -> None:
        super().__init__(**params)
        self._client = client or (OpenAICompatClient(self.params.llm) if self.params.llm else None)
        self._detectors: dict[str, Callable[[Msgs], list[Any]]] = {
            "tool_call": self._tool_call, "code": self._regex(_CODE_RE, "code_threshold", ("user", "assistant")),
            "math": self._regex(_MATH_RE, "math_threshold", ("user", "assistant")),
            "complex_logic": self._regex(_LOGIC_RE, "logic_threshold", ("assistant",)),
            "reasoning": self._reasoning, "user_dissatisfaction": self._dissatisfied, "llm": self._llm,
        }

    def process(self, rows: list[Row]) -> StepOutput:
        """Annotated rows, and rows without key rounds when dropping is on."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            rounds = self.classify(msgs) if isinstance(msgs, list) else {}
            if not rounds and self.params.drop_no_key_rounds:
                dropped.append(self.drop(row, "no_key_rounds", {"check": "no_key_rounds"}))
            else:
                kept.append(self._annotate(row, rounds))
        return kept, dropped

    def _annotate(self, row: Row, rounds: dict[int, str]) -> Row:
        out = dict(row)
        if not rounds:
            out[self.params.intent_field] = "other"
            return out
        out[self.params.intent_field] = Counter(rounds.values()).most_common(1)[0][0]
        out["user_data"] = set_user_data(row, {"key_rounds": sorted(rounds),
                                               "intents": {str(k): v for k, v in sorted(rounds.items())}})
        return out

    def classify(self, messages: list[Any]) -> dict[int, str]:
        """Assistant index -> intent; the first detector to claim an index wins."""
        msgs = [m if isinstance(m, dict) else {} for m in messages]
        rounds: dict[int, str] = {}
        for name in self.params.detectors or DEFAULT_DETECTORS:
            found = self._detectors[name](msgs) if name in self._detectors else []
            for item in found:  # an index, or (index, label) from the llm detector
                idx, label = item if isinstance(item, tuple) else (item, name)
                rounds.setdefault(idx, label)
            if name == "tool_call" and found and self.params.tool_call_exclusive:
                break
        return rounds

    def _tool_call(self, msgs: Msgs) -> list[int]:
        return [i for i, m in enumerate(msgs)
                if m.get("role") == "assistant" and normalize_tool_calls(m.get("tool_calls"))]

    def _regex(self, pattern: re.Pattern[str], threshold: str, roles: tuple[str, ...]) -> Callable[[Msgs], list[int]]:
        def detect(msgs: Msgs) -> list[int]:
            limit = getattr(self.params, threshold)
            out = []
            for i, m in enumerate(msgs):
                text = message_text(m.get("content"))
                hit = len(pattern.findall(text)) >= limit or (pattern is _CODE_RE and bool(_FENCE_RE.search(text)))
                if m.get("role") in roles and hit:
                    target = i if m.get("role") == "assistant" else _next_assistant(msgs, i)
                    if target is not None:
                        out.append(target)
            return out
        return detect

    def _reasoning(self, msgs: Msgs) -> list[int]:
        floor = self.params.min_reasoning_chars
        return [i for i, m in enumerate(msgs) if m.get("role") == "assistant" and (
            len(reasoning_of(m).strip()) >= floor or len(split_think(message_text(m.get("content")))[0]) >= floor)]

    def _dissatisfied(self, msgs: Msgs) -> list[int]:
        seen_asst, out = False, []
        for i, m in enumerate(msgs):
            seen_asst |= m.get("role") == "assistant"
            if m.get("role") == "user" and seen_asst and _DISSATISFIED_RE.search(message_text(m.get("content"))):
                nxt = _next_assistant(msgs, i)
                if nxt is not None:
                    out.append(nxt)
        return out

    def _llm(self, msgs: Msgs) -> list[tuple[int, str]]:
        if self._client is None:
            return []
        out = []
        for i, m in enumerate(msgs):
            if m.get("role") == "assistant":
                label = self._client.classify(msgs[: i + 1], INTENTS)
                if label not in (None, "other"):
                    out.append((i, label))
        return out

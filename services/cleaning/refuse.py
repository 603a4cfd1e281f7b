"""RefuseFilter: drop rows whose assistant refuses the task.

Deliberate changes from the reference:
- every assistant turn is scanned (refusals after a tool call were never seen);
- an apology needs a self-reference ("Unfortunately, the library cannot ..." is help);
- "I can't wait", "if I can't find ..." and similar are not refusals;
- a soft refusal followed by a pivot ("..., but here's how", "let me use X instead") is kept;
- Japanese 申し訳ありませんが / 致しかねます refusals are caught;
- Korean apologies need a refusal verb (죄송하지만 재고가 없습니다 is a fact, not a refusal).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.text import THINK_BLOCK_RE, is_agent_row, message_text

__all__ = ["RefuseFilter", "RefuseParams", "is_refusal"]

_TASK = (r"(?:help|assist|answer|respond|provide|generate|create|produce|fulfill|comply|address"
         r"|process|complete|handle|discuss|support|write|share|engage)")
_CANT = (r"(?:can'?t(?!\s+(?:wait|stress|believe|emphasi[sz]e|recommend\s+enough))|cannot(?!\s+(?:wait|stress|"
         r"believe|emphasi[sz]e|recommend\s+enough))|(?:am|are)\s+not\s+able\s+to|won'?t|will\s+not"
         r"|(?:am|are)\s+unable\s+to|must\s+decline|have\s+to\s+decline|decline\s+to|refuse\s+to"
         r"|(?:am|are)\s+not\s+(?:allowed|permitted|authorized|comfortable)\s+to)")
_NOT_COND = r"(?<!\bif\s)(?<!\bwhen\s)(?<!unless\s)(?<!hether\s)"
_SELF = _NOT_COND + r"\b(?:I|we|I'm|we're)\b"

_FLAGS = re.IGNORECASE | re.DOTALL
# Words the English families need: each family below lists groups of them, and a window
# lacking a word of every group cannot match that family (so its regex never runs).
_CANT_WORDS = ("can", "not", "won", "will", "unable", "decline", "refuse")
_TASK_WORDS = ("help", "assist", "answer", "respond", "provide", "generate", "create", "produce", "fulfill",
               "comply", "address", "process", "complete", "handle", "discuss", "support", "write", "share",
               "engage")
Family = tuple[tuple[tuple[str, ...], ...], str]

# Soft families: a pivot cue in the window cancels them.
_SOFT_EN: tuple[Family, ...] = (
    ((_CANT_WORDS, _TASK_WORDS), _SELF + r".{0,25}?" + _CANT + r".{0,60}?\b" + _TASK + r"\b"),
    ((("sorry", "apologi", "unfortunately", "regret"), _CANT_WORDS),
     r"\b(?:I'?m\s+(?:so\s+|very\s+)?sorry|I\s+apologi[sz]e|unfortunately|I\s+regret)\b.{0,80}?"
     + _SELF + r".{0,25}?" + _CANT),
)
_SOFT_CJK = (
    (r"(?:非常|十分|很|极为)?(?:抱歉|对不起)[\s，,。！!、]{0,5}.{0,40}?(?:无法|不能|不可以|不便|没有办法)"
     r"(?:帮|回答|提供|生成|处理|协助|完成|执行|回复|解答|满足|参与|讨论)"),
    (r"作为(?:一个)?(?:AI|人工智能|语言模型|大模型)[，,].{0,30}?(?:无法|不能|不可以).{0,20}?"
     r"(?:帮|回答|提供|生成|处理|协助|讨论|参与|评论|创作|输出)"),
    (r"我(?:无法|不能|不可以|没有办法|不便|不适合|不被允许|不被授权).{0,30}?"
     r"(?:帮|回答|提供|生成|处理|协助|完成|执行|回复|解答)"),
    (r"(?:申し訳(?:ありません|ございません|ない)|恐れ入ります|すみません)(?:が|けれど|けど)?.{0,40}?"
     r"(?:できません|お答えできません|対応できません|いたしかねます|致しかねます|できかねます|お手伝いできません)"),
    (r"(?:죄송하지만|죄송합니다만|유감스럽게도|죄송합니다[.,]?).{0,40}?"
     r"(?:드릴\s*수\s*없|할\s*수\s*없|해\s*드릴\s*수\s*없|도와\s*드리기\s*어렵|제공할\s*수\s*없)"),
)
# Hard families: explicit policy refusals; no pivot exemption.
_HARD_EN: tuple[Family, ...] = (
    ((("violates", "against", "inappropriate", "not"), ("request", "question", "prompt", "content", "topic", "task")),
     (r"\b(?:this|that|your|the)\s+(?:request|question|prompt|content|topic|task)\b.{0,60}?"
      r"(?:violates|goes\s+against|is\s+inappropriate|is\s+not\s+(?:appropriate|allowed|permitted|something\s+I\s+can))")),
    ((("decline", "refuse"),), r"\b(?:I|we)\s+(?:must|have\s+to|am\s+going\s+to|need\s+to)\s+(?:decline|refuse)\b"),
    ((("decline", "refuse"),), r"\b(?:I|we)\s+(?:decline|refuse)\s+(?:this|your|to)\b"),
    ((("outside", "beyond"),), r"\bthis\s+(?:falls\s+outside|is\s+outside|is\s+beyond)\s+(?:what\s+I|my)\b"),
    ((("ai",), ("can", "not", "won"), _TASK_WORDS),
     r"\bas\s+an\s+AI\b.{0,20}?\bI\s+(?:can'?t|cannot|am\s+not\s+able|won'?t)\b.{0,40}?\b" + _TASK),
)
_HARD_CJK = (
    r"(?:您的|这个|该)(?:请求|问题|内容|话题).{0,20}?(?:违反|不当|不合适|超出了?我)",
    r"(?:回答|対応|お答え)(?:する|いたす)ことは?できません|ご要望には?お(?:応え|答え)できません",
    r"(?:その|この)(?:リクエスト|質問|依頼).{0,20}?(?:お断り|辞退|対応できません)",
    r"(?:답변|도움|처리|제공)(?:드리기|하기)\s*(?:어렵|불가|할\s*수\s*없)",
    r"(?:요청|질문|내용).{0,20}?(?:거절|거부|응할\s*수\s*없)",
)
# Whole alternations for windows with non-ASCII text (case folding reaches beyond ASCII there).
_SOFT = re.compile("|".join([p for _, p in _SOFT_EN] + list(_SOFT_CJK)), _FLAGS)
_HARD = re.compile("|".join([p for _, p in _HARD_EN] + list(_HARD_CJK)), _FLAGS)
# ASCII windows: one regex per English family, behind its word gate; CJK families cannot match.
_SOFT_EN_RX = tuple((gate, re.compile(p, _FLAGS)) for gate, p in _SOFT_EN)
_HARD_EN_RX = tuple((gate, re.compile(p, _FLAGS)) for gate, p in _HARD_EN)
_PIVOT = re.compile(
    r"\b(?:let\s+me|I'?ll|I\s+will|instead|alternatively|however,?\s+(?:you|I|we|here)|but\s+here'?s"
    r"|here'?s\s+how|but\s+you\s+can|you\s+can\s+(?:try|use))\b"
    r"|让我|改用|尝试|不过|然而|但(?:是)?(?:可以|你可以|我可以)|代わりに|ただし|しかし|대신|(?<![가-힣])하지만",
    re.I,
)

# In agent rows a denial that cites the operator's policy or redirects the user is the task
# done right
# (an airline agent refusing an out-of-policy refund), not a model refusal.
_POLICY_REASON = re.compile(
    r"\b(?:policy|policies|guidelines?|terms|eligib\w*|per\s+the|due\s+to|since\s+(?:you|the|your)"
    r"|because\s+(?:you|the|your)|membership|regulations?|human\s+agent|would\s+you\s+like"
    r"|you\s+(?:would|will)\s+need\s+to|I\s+(?:can|could)\s+(?:only|transfer|help\s+you\s+with)|recommend)\b"
    r"|规定|政策|条款|人工客服|規定|ポリシー|정책|규정|상담원",
    re.I,
)

# Cheap substring screen: a window without any of these cannot match a family above.
_TRIGGERS_EN = ("can't", "cannot", "unable", "won't", "will not", "not able", "declin", "refus", "not allowed",
                "not permitted", "not authorized", "not comfortable", "violat", "against", "inappropriate",
                "not appropriate", "outside", "beyond", "not something")
_TRIGGERS_CJK = ("无法", "不能", "不可以", "不便", "没有办法", "不适合", "不被", "违反", "不当", "不合适", "超出",
                 "できません", "かねます", "お断り", "辞退", "없", "어렵", "불가", "거절", "거부")


# One search for all CJK triggers: the engine skips ahead on their rare first characters.
_ANY_CJK = re.compile("|".join(map(re.escape, _TRIGGERS_CJK)))


def _may_refuse(window: str, low: str) -> bool:
    # map() over the bound method keeps the substring loop in C.
    if any(map(low.__contains__, _TRIGGERS_EN)):
        return True
    return not window.isascii() and _ANY_CJK.search(window) is not None


def _gate_open(low: str, gate: tuple[tuple[str, ...], ...]) -> bool:
    return all(any(map(low.__contains__, words)) for words in gate)


def _is_hard(window: str, low: str) -> bool:
    if not window.isascii():
        return _HARD.search(window) is not None
    return any(_gate_open(low, gate) and rx.search(window) for gate, rx in _HARD_EN_RX)


def _soft_start(window: str, low: str) -> int | None:
    # Where the whole alternation would match first: the earliest start of any family.
    if not window.isascii():
        match = _SOFT.search(window)
        return match.start() if match else None
    starts = [m.start() for gate, rx in _SOFT_EN_RX if _gate_open(low, gate) and (m := rx.search(window))]
    return min(starts) if starts else None


def is_refusal(text: str, *, check_window: int = 600, agent: bool = False) -> bool:
    """True if the first ``check_window`` chars (think blocks removed) refuse the task."""
    if check_window <= 0 or not text:
        return False
    if "<" in text:
        text = THINK_BLOCK_RE.sub("", text)
    window = text.strip()[:check_window].replace("\u2019", "'")
    low = window.lower()
    if not _may_refuse(window, low):
        return False
    if _is_hard(window, low):
        return True
    start = _soft_start(window, low)
    if start is None or _PIVOT.search(window, start):
        return False
    return not (agent and _POLICY_REASON.search(window))


class RefuseParams(StepParams):
    """Parameters of RefuseFilter."""

    check_window: int = Field(600, ge=0, description="Chars scanned per turn (0 = never detects).")
    scan_all_assistants: bool = Field(True, description="Scan every assistant turn, not only the first.")
    scan_reasoning: bool = Field(False, description="Also scan reasoning_content/thinking.")
    agent_policy_exempt: bool = Field(True, description="In agent rows, keep denials that cite a policy.")


class RefuseFilter(ParamStep[RefuseParams]):
    """Drop rows with a refusing assistant turn (``refusal``)."""

    Params = RefuseParams

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows without refusals."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            if isinstance(msgs, list) and self.refuses(msgs):
                dropped.append(self.drop(row, "refusal"))
            else:
                kept.append(row)
        return kept, dropped

    def refuses(self, messages: list[Any]) -> bool:
        """True if a scanned assistant turn refuses."""
        p = self.params
        agent = p.agent_policy_exempt and is_agent_row(messages)
        for m in messages:
            if not isinstance(m, dict) or m.get("role") != "assistant":
                continue
            texts = [message_text(m.get("content"), sep="")]
            if p.scan_reasoning:
                texts += [v for k in ("reasoning_content", "thinking") if isinstance(v := m.get(k), str)]
            if any(is_refusal(t, check_window=p.check_window, agent=agent) for t in texts):
                return True
            if not p.scan_all_assistants and texts[0].strip():
                return False
        return False

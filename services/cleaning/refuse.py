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
from services.cleaning.requests import asks_for_composition, letter_start
from services.cleaning.text import THINK_BLOCK_RE, is_agent_row, message_text

__all__ = ["RefuseFilter", "RefuseParams", "is_refusal", "refusal_evidence"]

Evidence = dict[str, Any]

_TASK = (r"(?:help|assist|answer|respond|provide|generate|create|produce|fulfill|comply|address"
         r"|process|complete|handle|discuss|support|write|share|engage)")
_CANT = (r"(?:can'?t(?!\s+(?:wait|stress|believe|emphasi[sz]e|recommend\s+enough))|cannot(?!\s+(?:wait|stress|"
         r"believe|emphasi[sz]e|recommend\s+enough))|(?:am|are)\s+not\s+able\s+to|won'?t|will\s+not"
         r"|(?:am|are)\s+unable\s+to|must\s+decline|have\s+to\s+decline|decline\s+to|refuse\s+to"
         r"|(?:am|are)\s+not\s+(?:allowed|permitted|authorized|comfortable)\s+to|not\s+going\s+to)")
_NOT_COND = r"(?<!\bif\s)(?<!\bwhen\s)(?<!unless\s)(?<!hether\s)"
# Zero-width tests at one position commute: the word boundary and the first letter go before the
# four lookbehinds, so the engine rules most positions out with one cheap test.
_SELF = r"\b(?=[iw])" + _NOT_COND + r"(?:I|we|I'm|we're)\b"

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
     r"\b(?=[iu])(?:I'?m\s+(?:so\s+|very\s+)?sorry|I\s+apologi[sz]e|unfortunately|I\s+regret)\b.{0,80}?"
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
     (r"\b(?=[ty])(?:this|that|your|the)\s+(?:request|question|prompt|content|topic|task)\b.{0,60}?"
      r"(?:violates|goes\s+against|is\s+inappropriate|is\s+not\s+(?:appropriate|allowed|permitted|something\s+I\s+can))")),
    ((("decline", "refuse"),),
     r"\b(?=[iw])(?:I|we)\s+(?:must|have\s+to|am\s+going\s+to|need\s+to)\s+(?:decline|refuse)\b"),
    ((("decline", "refuse"),), r"\b(?=[iw])(?:I|we)\s+(?:decline|refuse)\s+(?:this|your|to)\b"),
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
# An AI-identity disclaimer with an inability ("as an AI language model, I cannot ..."): a
# soft refusal in every language (a pivot to an answer still cancels it).
# Each of the long alternations below opens with a lookahead for the first characters its
# alternatives can start with: a zero-width test, so what matches is unchanged, but the engine
# skips most positions at once instead of trying every alternative there.
_AI_SELF = re.compile(
    r"(?=[a作身我人言인언])"
    r"(?:\bas\s+an?\s+(?:AI|artificial\s+intelligence|(?:large\s+)?language\s+model|virtual\s+assistant|chatbot)\b.{0,40}?"
    r"\bI(?:'m|\s+am)?\s+(?:can'?t|cannot|(?:not\s+able|unable)\s+to|won'?t|do\s*n[o']?t\s+have\s+the\s+(?:ability|capability))"
    r"|(?:作为|身为|我是)(?:一(?:个|名|款))?\s*(?:AI|人工智能|语言模型|大模型)[^，,。！!]{0,20}[，,]?[^。！!]{0,30}?"
    r"(?:无法|不能|不可以|没有办法|没办法|不具备)"
    r"|(?:AI|人工知能|言語モデル)(?:言語モデル|アシスタント|モデル)?\s*(?:として|である私|なので|のため|ですので|の私)[^。]{0,50}?"
    r"(?:できません|できかねます|いたしかねます|致しかねます|不可能です)"
    r"|(?:AI|인공지능|언어\s*모델)\s*(?:언어\s*모델|어시스턴트|모델|비서|챗봇)?\s*(?:로서|으로서|이기\s*때문에|이라서|라서|이므로|인\s*저는)"
    r"[^.!?]{0,50}?(?:수(?:는|가)?\s*없|어렵습니다|불가능))",
    _FLAGS,
)
# Declining the task on ethical grounds (academic integrity, cheating, harm): a refusal even
# when it offers lesser help instead ("I won't write it for you, but I can outline ...").
_DECLINE = re.compile(
    r"(?=[iw我すこのお수거])(?:" + _SELF
    + r"(?:'m|\s+am|\s+will|\s+would)?\s*(?:not\s+going\s+to|can'?t|cannot|won'?t|will\s+not"
    r"|(?:not\s+able|unable)\s+to|must\s+decline|refuse|(?:do|would)\s*n[o']?t\s+(?:feel\s+)?comfortable)"
    r"|我(?:不能|无法|不可以|不会|没办法|拒绝|不便)|(?:することは|ことは|のは)(?:できません|いたしかねます|致しかねます)|お断り"
    r"|수(?:는|가)?\s*없습니다|수(?:는|가)?\s*없어요|거절)",
    _FLAGS,
)
_ETHICS = re.compile(
    r"(?=[apcduih学作抄剽代不违盗カ倫違부표윤불])"
    r"(?:\bacademic\s+(?:integrity|dishonesty|misconduct)|\bplagiari\w*|\bcheat\w*|\bdishonest\w*|\bunethical\b|\billegal\b"
    r"|\bagainst\s+(?:the\s+)?(?:rules|law|honou?r\s+code)|\bhonou?r\s+code\b"
    r"|学术(?:诚信|不端|造假|道德)|作弊|抄袭|剽窃|代写|不道德|违法|违反(?:法律|规定|学术|诚信)"
    r"|不正行為|不正|盗用|剽窃|カンニング|倫理|違法|부정\s*행위|표절|윤리|불법)",
    _FLAGS,
)
# Every _AI_SELF match contains one of these (lowercased): the cheap gate before its regex.
_AI_WORDS = ("ai", "artificial", "language model", "assistant", "chatbot", "人工", "语言模型", "大模型", "言語", "모델")
_ETHICS_REACH = 250
_REQUEST_CHARS = 2000  # the head of a request says what it asks for
_DECLINE_HEAD = 200

_PIVOT = re.compile(
    r"(?=[liahby让改尝不然但代たしでけ대하없않어])"
    r"(?:\b(?:let\s+me|I'?ll|I\s+will|instead|alternatively|however,?\s+(?:you|I|we|here)|but\s+here'?s"
    r"|here'?s\s+how|but\s+you\s+can|you\s+can\s+(?:try|use))\b"
    r"|让我|改用|尝试|不过|然而|但(?:是)?(?:可以|你可以|我可以)|代わりに|ただし|しかし|ですが|けれど|대신|(?<![가-힣])하지만"
    r"|(?:없|않|어렵)지만)",
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
_TRIGGERS_EN = ("can't", "cannot", "unable", "won't", "will not", "not able", "not going to", "declin", "refus",
                "not allowed",
                "not permitted", "not authorized", "not comfortable", "violat", "against", "inappropriate",
                "not appropriate", "outside", "beyond", "not something")
_TRIGGERS_CJK = ("无法", "不能", "不可以", "不便", "没有办法", "没办法", "不具备", "不会", "拒绝", "不适合", "不被",
                 "违反", "不当", "不合适", "超出", "不可能",
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


def _hard_match(window: str, low: str) -> re.Match[str] | None:
    if not window.isascii():
        return _HARD.search(window)
    for gate, rx in _HARD_EN_RX:
        if _gate_open(low, gate) and (m := rx.search(window)):
            return m
    return None


def _soft_match(window: str, low: str) -> re.Match[str] | None:
    # The earliest match of any soft family (the AI-identity family included).
    found: list[re.Match[str]] = []
    if not window.isascii():
        if (m := _SOFT.search(window)) is not None:
            found.append(m)
    else:
        found += [m for gate, rx in _SOFT_EN_RX if _gate_open(low, gate) and (m := rx.search(window))]
    if any(map(low.__contains__, _AI_WORDS)) and (m := _AI_SELF.search(window)):
        found.append(m)
    return min(found, key=lambda x: x.start()) if found else None


def _ethical_decline(window: str) -> re.Match[str] | None:
    # A decline opens the reply; "cannot replace human thought ... ethics" deep in an essay or
    # a requested dialogue is content, not a refusal.
    for m in _DECLINE.finditer(window, 0, _DECLINE_HEAD + 40):
        if m.start() > _DECLINE_HEAD:
            break
        if _ETHICS.search(window, max(0, m.start() - _ETHICS_REACH), m.end() + _ETHICS_REACH):
            return m
    return None


def refusal_evidence(text: str, *, check_window: int = 600, agent: bool = False,
                     composition: bool = False) -> Evidence | None:
    """Evidence that the first ``check_window`` chars (think blocks removed) refuse the task, or None.

    ``composition``: the user asked for a letter or message; refusal words inside the written
    piece ("I'm sorry, I cannot attend") belong to it, so only the text before its subject or
    salutation line is judged.
    """
    if check_window <= 0 or not text:
        return None
    if "<" in text:
        text = THINK_BLOCK_RE.sub("", text)
    window = text.strip()[:check_window].replace("\u2019", "'")
    if composition:
        start = letter_start(window)
        if start is not None:
            window = window[:start]
    low = window.lower()
    if not _may_refuse(window, low):
        return None
    hard = _hard_match(window, low)
    if hard is not None:
        return _evidence("policy", window, hard)
    decline = _ethical_decline(window)
    if decline is not None:
        ground = _ETHICS.search(window)
        return {**_evidence("ethical_decline", window, decline), "ground": ground.group(0) if ground else None}
    soft = _soft_match(window, low)
    # A disclaimer is often repeated after the answer it prefaced ("..., but if I try: ...
    # again, as an AI I cannot really feel this"): for it a pivot anywhere cancels.
    if soft is None or _PIVOT.search(window, 0 if soft.re is _AI_SELF else soft.start()):
        return None
    if agent and _POLICY_REASON.search(window):
        return None
    return _evidence("ai_disclaimer" if soft.re is _AI_SELF else "self_refusal", window, soft)


#: The findings the agent policy exemption can cancel.
_SOFT_CHECKS = frozenset({"self_refusal", "ai_disclaimer"})


def _evidence(kind: str, window: str, m: re.Match[str]) -> Evidence:
    return {"check": kind, "window": window[max(0, m.start() - 20):m.end() + 40].strip(), "offset": m.start()}


def is_refusal(text: str, *, check_window: int = 600, agent: bool = False, composition: bool = False) -> bool:
    """True if the first ``check_window`` chars (think blocks removed) refuse the task."""
    return refusal_evidence(text, check_window=check_window, agent=agent, composition=composition) is not None


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
        """Keep rows without refusals; a drop carries the refusing window as evidence."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            found = self.find_refusal(msgs) if isinstance(msgs, list) else None
            if found is not None:
                dropped.append(self.drop(row, "refusal", found))
            else:
                kept.append(row)
        return kept, dropped

    def refuses(self, messages: list[Any]) -> bool:
        """True if a scanned assistant turn refuses."""
        return self.find_refusal(messages) is not None

    def find_refusal(self, messages: list[Any], *, agent: bool | None = None,
                     texts: list[str] | None = None) -> Evidence | None:
        """Evidence of the first refusing assistant turn (with ``message_index`` and ``part``), or None.

        ``agent`` (is this an agent row) and ``texts`` (each message's text) may come precomputed.
        """
        p = self.params
        # Whether the row is an agent row matters only to a soft refusal (the policy exemption),
        # so it is worked out when one is found, not for every row.
        is_agent: list[bool | None] = [agent] if p.agent_policy_exempt else [False]
        user: Any = None
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                continue
            if m.get("role") == "user":
                user = m.get("content")  # each reply is judged against the request it answers
                continue
            if m.get("role") != "assistant":
                continue
            content = m.get("content")
            # Text parts are joined without a separator here; a plain string is the same either way.
            if isinstance(content, str):
                own = texts[i] if texts is not None else content
            else:
                own = message_text(content, sep="")
            parts = [("content", own)]
            if p.scan_reasoning:
                parts += [(k, v) for k in ("reasoning_content", "thinking") if isinstance(v := m.get(k), str)]
            for part, text in parts:
                found = self._evidence(text, messages, is_agent)
                # Only a reply that refuses asks whether a letter was requested (most never do).
                if found is not None and asks_for_composition(message_text(user)[:_REQUEST_CHARS]):
                    found = self._evidence(text, messages, is_agent, composition=True)
                if found is not None:
                    return {**found, "message_index": i, "part": part}
            if not p.scan_all_assistants and parts[0][1].strip():
                return None
        return None

    def _evidence(self, text: str, messages: list[Any], is_agent: list[bool | None], *,
                  composition: bool = False) -> Evidence | None:
        # refusal_evidence with agent=True differs only by dropping a soft refusal that cites a
        # policy: judge as a non-agent first, and look at the row only for such a finding.
        window = self.params.check_window
        found = refusal_evidence(text, check_window=window, composition=composition)
        if found is None or found["check"] not in _SOFT_CHECKS or is_agent[0] is False:
            return found
        if is_agent[0] is None:
            is_agent[0] = is_agent_row(messages)
        if not is_agent[0]:
            return found
        return refusal_evidence(text, check_window=window, agent=True, composition=composition)

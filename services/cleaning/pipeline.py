"""The default per-batch cleaning pipeline."""

from __future__ import annotations

from services.cleaning.base import Step
from services.cleaning.deadloop import DeadLoopFilter
from services.cleaning.hard import HardFilter
from services.cleaning.normalizer import MessageNormalizer
from services.cleaning.refuse import RefuseFilter
from services.cleaning.sanity import MessageSanityFilter
from services.cleaning.soup import TokenSoupFilter

__all__ = ["DEFAULT_PIPELINE_NAMES", "default_pipeline"]

DEFAULT_PIPELINE_NAMES: tuple[str, ...] = (
    "MessageNormalizer", "MessageSanityFilter", "HardFilter", "DeadLoopFilter", "RefuseFilter",
    "TokenSoupFilter",
)


def default_pipeline() -> list[Step]:
    """Per-batch steps of the default pipeline, in order.

    Global dedup (``DedupFilter`` in ``services/cleaning/dedup.py``) comes after these
    steps: it must see the whole dataset, so the job runner appends it as a separate
    global phase rather than running it inside each batch.
    """
    return [
        MessageNormalizer(),
        MessageSanityFilter(),
        HardFilter(),
        DeadLoopFilter(),
        RefuseFilter(),
        TokenSoupFilter(),
    ]

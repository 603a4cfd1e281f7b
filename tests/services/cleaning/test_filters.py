import services.cleaning.filters as filters
from services.cleaning.base import Step


def test_public_names_are_sorted_and_importable():
    assert filters.__all__ == sorted(filters.__all__)
    for name in filters.__all__:
        assert getattr(filters, name) is not None


def test_every_step_subclasses_the_contract():
    for name in ("DeadLoopFilter", "HardFilter", "IntentClassifier", "MessageNormalizer", "MessageSanityFilter",
                 "ModelFilter", "RefuseFilter", "ScoreFilter", "TokenSoupFilter"):
        assert issubclass(getattr(filters, name), Step)

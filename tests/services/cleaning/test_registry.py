import pytest

from services.cleaning.hard import HardFilter
from services.cleaning.registry import STEP_REGISTRY, build_pipeline, build_step, describe_steps
from shared.errors import InvalidInput


def test_reference_names_are_registered():
    for name in ("MessageNormalizer", "MessageSanityFilter", "HardFilter", "DeadLoopFilter", "RefuseFilter",
                 "TokenSoupFilter", "ModelFilter", "IntentClassifier", "ScoreFilter"):
        assert name in STEP_REGISTRY


def test_describe_steps_gives_param_schemas_with_defaults():
    info = {s.name: s for s in describe_steps()}
    props = info["HardFilter"].params_schema["properties"]
    assert props["min_user_chars"]["default"] == 10 and props["max_rounds"]["default"] is None
    assert info["HardFilter"].description


def test_build_step_from_spec():
    step = build_step({"name": "HardFilter", "params": {"max_rounds": 3}})
    assert isinstance(step, HardFilter) and step.params.max_rounds == 3
    assert len(build_pipeline([{"name": "RefuseFilter"}, {"name": "ModelFilter",
                                                           "params": {"allowed_models": ["a/b"]}}])) == 2


@pytest.mark.parametrize("spec", [{"name": "NoSuchFilter"}, {"name": "HardFilter", "params": {"max_rounds": "x"}},
                                  {"name": "HardFilter", "params": {"bogus": 1}}, {"params": {}}])
def test_bad_specs_raise_invalid_input(spec):
    with pytest.raises(InvalidInput) as exc:
        build_step(spec)
    assert exc.value.status_code == 400

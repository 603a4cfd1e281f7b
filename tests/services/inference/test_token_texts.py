"""``/detokenize`` with ``return_token_texts``: the text of each id, for per-token views."""

from __future__ import annotations

import httpx


async def test_detokenize_returns_each_ids_own_text(client: httpx.AsyncClient) -> None:
    text = "Hello there, tokens!\nNext line."
    tokens = (await client.post("/tokenize", json={"prompt": text, "add_special_tokens": False})).json()["tokens"]
    body = (await client.post("/detokenize", json={"tokens": tokens, "return_token_texts": True})).json()
    assert body["prompt"] == text and len(body["token_texts"]) == len(tokens)
    assert "".join(body["token_texts"]) == text  # plain ASCII: the pieces join back to the text
    plain = (await client.post("/detokenize", json={"tokens": tokens})).json()
    assert "token_texts" not in plain
    bad = await client.post("/detokenize", json={"tokens": [10**9], "return_token_texts": True})
    assert bad.status_code == 400

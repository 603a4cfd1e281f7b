"""Agent Harness seed (003): memory scoring, score = 0.65·cosine + 0.25·lexical overlap + 0.10·importance.

Memories are writable per namespace, over REST (``/v1/memories/{namespace}``)
and by the ``memory_write`` tool, stored in Postgres (table ``memory``) with
their MiniLM embeddings, and ranked for real by ``memory_search`` (the tool) or
``POST /v1/memories/{namespace}/search``. The tools take ``namespace`` as an
argument; without one they use the call's session, so a session's memories
stay its own.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from services.tools.app import SERVICE
from services.tools.embeddings import MiniLMEmbedder
from services.tools.memory_search import lexical_overlap
from shared.db.models import MemoryRow

ALPHA, BETA, GAMMA = 0.65, 0.25, 0.10


@pytest.fixture
async def client(make_client: Any) -> httpx.AsyncClient:
    return await make_client(SERVICE, tools_pool_size=1)  # type: ignore[no-any-return]


def _call(name: str, arguments: dict[str, Any], session_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"tool_call": {"id": "m1", "type": "function",
                                          "function": {"name": name, "arguments": json.dumps(arguments)}}}
    if session_id:
        body["session_id"] = session_id
    return body


async def test_rest_writes_are_stored_with_embeddings_and_ranked_by_the_seed_formula(
        client: httpx.AsyncClient, session: AsyncSession) -> None:
    texts = [("The user prefers Python for scripting", 0.9), ("Paris is the capital of France", 0.2),
             ("The user dislikes long meetings", 0.5)]
    ids = []
    for text, importance in texts:
        resp = await client.post("/v1/memories/agent-a", json={"text": text, "importance": importance,
                                                                "metadata": {"source": "test"}})
        assert resp.status_code == 201, resp.text
        ids.append(resp.json()["id"])
    await client.post("/v1/memories/agent-b", json={"text": "The user prefers Rust for scripting"})
    rows = list(await session.scalars(select(MemoryRow).where(MemoryRow.namespace == "agent-a")))
    assert sorted(str(r.id) for r in rows) == sorted(ids) and all(len(r.embedding) == 384 * 4 for r in rows)
    query = "which language does the user prefer for scripting"
    resp = await client.post("/v1/memories/agent-a/search", json={"query": query, "top_k": 3})
    hits = resp.json()["hits"]
    assert resp.status_code == 200 and [h["text"] for h in hits][0] == texts[0][0] and len(hits) == 3
    model = MiniLMEmbedder()
    qv = model.encode([query])[0]
    for hit in hits:
        cosine = float(model.encode([hit["text"]])[0] @ qv)
        lexical = lexical_overlap(query, hit["text"])
        assert hit["cosine"] == pytest.approx(cosine, abs=1e-4) and hit["lexical"] == pytest.approx(lexical)
        assert hit["score"] == pytest.approx(ALPHA * cosine + BETA * lexical + GAMMA * hit["importance"], abs=1e-4)
    assert "Rust" not in json.dumps(hits)  # namespaces never mix
    page = (await client.get("/v1/memories/agent-a")).json()
    assert page["total"] == 3 and {m["metadata"]["source"] for m in page["memories"]} == {"test"}
    assert (await client.delete(f"/v1/memories/agent-a/{ids[1]}")).status_code == 204
    assert (await client.delete(f"/v1/memories/agent-a/{ids[1]}")).status_code == 404
    assert (await client.get("/v1/memories/agent-a")).json()["total"] == 2
    stored = np.frombuffer(next(r for r in rows if str(r.id) == ids[0]).embedding, dtype="<f4")
    assert float(np.linalg.norm(stored)) == pytest.approx(1.0, abs=1e-4)


async def test_bad_memory_requests_are_422_naming_the_field(client: httpx.AsyncClient) -> None:
    resp = await client.post("/v1/memories/agent-a", json={"text": "x", "importance": 2})
    assert resp.status_code == 422 and "importance" in resp.text
    resp = await client.post("/v1/memories/bad%20name", json={"text": "x"})
    assert resp.status_code == 422 and "namespace" in resp.text
    resp = await client.post("/v1/memories/agent-a/search", json={"query": ""})
    assert resp.status_code == 422 and "query" in resp.text


async def test_memory_write_tool_then_memory_search_tool_and_rest_see_it(client: httpx.AsyncClient) -> None:
    wrote = await client.post("/v1/tools/call", json=_call(
        "memory_write", {"text": "The launch code is tulip", "importance": 1.0}, session_id="s-42"))
    assert wrote.status_code == 200 and wrote.json()["status"] == "ok", wrote.text
    assert json.loads(wrote.json()["content"])["namespace"] == "s-42"
    found = await client.post("/v1/tools/call", json=_call("memory_search", {"query": "launch code"}, "s-42"))
    assert found.json()["status"] == "ok" and "tulip" in found.json()["content"]
    other = await client.post("/v1/tools/call", json=_call("memory_search", {"query": "launch code"}, "s-7"))
    assert other.json()["content"] == "[]"
    named = await client.post("/v1/tools/call", json=_call(
        "memory_search", {"query": "launch code", "namespace": "s-42"}, "s-7"))
    assert "tulip" in named.json()["content"]
    rest = await client.post("/v1/memories/s-42/search", json={"query": "what is the launch code"})
    assert rest.json()["hits"][0]["text"] == "The launch code is tulip"
    names = [t["function"]["name"] for t in (await client.get("/v1/tools")).json()["tools"]]
    assert {"memory_search", "memory_write"} <= set(names)

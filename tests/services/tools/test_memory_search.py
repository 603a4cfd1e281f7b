"""memory_search with the real bundled MiniLM model."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from services.tools.context import current_session
from services.tools.embeddings import MiniLMEmbedder, bundled_model_dir
from services.tools.manager import ToolManager
from services.tools.memory_search import MemorySearchTool, MemoryStore, lexical_overlap, words


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    """One model load for the whole file."""
    return MiniLMEmbedder()


def test_bundled_model_files_are_present() -> None:
    assert (bundled_model_dir() / "model.safetensors").is_file()


def test_embeddings_are_unit_vectors_and_meaningful(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.encode(
        ["a cat sits on the mat", "a kitten rests on a rug", "tax law of 1998"]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_lexical_overlap_is_share_of_query_words() -> None:
    assert words("Hello, hello WORLD!") == {"hello", "world"}
    assert lexical_overlap("red blue green", "the blue and green sea") == pytest.approx(2 / 3)
    assert lexical_overlap("", "anything") == 0.0


def test_score_is_the_weighted_sum_and_each_component_is_logged(
    embedder: MiniLMEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    store = MemoryStore(embedder)
    store.add("The user prefers Python for scripting", importance=0.9)
    store.add("Paris is the capital of France", importance=0.1)
    with caplog.at_level(logging.INFO, logger="services.tools.memory_search"):
        hits = store.search("which language does the user prefer for scripting", top_k=2)
    assert hits[0].text.startswith("The user prefers Python")
    for hit in hits:
        expected_cos = float(
            embedder.encode([hit.text])[0]
            @ embedder.encode(["which language does the user prefer for scripting"])[0]
        )
        assert hit.cosine == pytest.approx(expected_cos, abs=1e-4)
        assert hit.score == pytest.approx(
            0.65 * hit.cosine + 0.25 * hit.lexical + 0.10 * hit.importance
        )
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 2 and all(
        "cosine=" in m and "lexical=" in m and "importance=" in m for m in logged
    )


def test_importance_breaks_a_tie(embedder: MiniLMEmbedder) -> None:
    store = MemoryStore(embedder)
    low = store.add("meeting notes from Tuesday", importance=0.0)
    high = store.add("meeting notes from Tuesday", importance=1.0)
    assert [hit.id for hit in store.search("meeting notes")] == [high, low]


async def test_tool_is_scoped_to_the_current_session(embedder: MiniLMEmbedder) -> None:
    store = MemoryStore(embedder)
    store.add("alpha secret plan", importance=0.5, session_id="s1")
    manager = ToolManager([MemorySearchTool(store)])
    call = {
        "id": "m",
        "function": {"name": "memory_search", "arguments": {"query": "plan", "top_k": 3}},
    }
    token = current_session.set("s1")
    try:
        found = await manager.call_structured(call)
    finally:
        current_session.reset(token)
    assert found.ok and "alpha secret plan" in found.content and '"score"' in found.content
    assert (await manager.call_structured(call)).content == "[]"
    assert store.count("s1") == 1 and store.count() == 0

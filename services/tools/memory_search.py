"""``memory_search`` and ``memory_write``: agent memories per namespace, ranked by meaning.

score = 0.65 · cosine(query, memory) + 0.25 · |query words ∩ memory words| / |query words|
        + 0.10 · importance

A namespace is the tool call's ``namespace`` argument, else the current
session. Memories live in a ``MemoryBackend``: the tool service uses the
database-backed store (``services.tools.memory_store``, table ``memory``, with
each memory's embedding); ``MemoryStore`` keeps them in process for library use.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, Field

from services.tools.base import BaseTool
from services.tools.context import current_session
from services.tools.embeddings import MiniLMEmbedder

__all__ = ["MemoryBackend", "MemoryHit", "MemorySearchTool", "MemoryStore", "MemoryWriteTool", "lexical_overlap",
           "rank", "words"]

log = logging.getLogger(__name__)

W_COSINE, W_LEXICAL, W_IMPORTANCE = 0.65, 0.25, 0.10
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> set[str]:
    """Lower-cased word set of ``text``."""
    return set(_WORD.findall(text.lower()))


def lexical_overlap(query: str, memory: str) -> float:
    """Share of the query's words that also occur in the memory (0 for an empty query)."""
    q = words(query)
    return len(q & words(memory)) / len(q) if q else 0.0


class MemoryHit(BaseModel):
    """One ranked memory with every score component."""

    id: str
    text: str
    importance: float
    cosine: float
    lexical: float
    score: float


class _Memory(BaseModel):
    id: str
    text: str
    importance: float = Field(ge=0.0, le=1.0)


class MemoryBackend(Protocol):
    """Where the memory tools read and write."""

    async def awrite(self, namespace: str, text: str, *, importance: float = 0.5,
                     metadata: dict[str, Any] | None = None) -> str:
        """Store one memory; returns its id."""
        ...

    async def asearch(self, namespace: str, query: str, *, top_k: int = 5) -> list[MemoryHit]:
        """The ``top_k`` best memories of ``namespace`` for ``query``."""
        ...


def _hit(query: str, item: _Memory, cosine: float) -> MemoryHit:
    lexical = lexical_overlap(query, item.text)
    score = W_COSINE * cosine + W_LEXICAL * lexical + W_IMPORTANCE * item.importance
    log.info("memory_search id=%s cosine=%.4f lexical=%.4f importance=%.2f score=%.4f",
             item.id, cosine, lexical, item.importance, score)
    return MemoryHit(id=item.id, text=item.text, importance=item.importance, cosine=cosine, lexical=lexical,
                     score=score)


def rank(query: str, query_vector: np.ndarray, items: Sequence[Any], vectors: np.ndarray, *,
         top_k: int) -> list[MemoryHit]:
    """Score every memory (objects with id, text, importance) against the query; best ``top_k`` first."""
    if not items:
        return []
    cosines = vectors @ query_vector
    hits = [_hit(query, _Memory(id=str(i.id), text=i.text, importance=i.importance), float(c))
            for i, c in zip(items, cosines, strict=True)]
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return hits[:top_k]


class MemoryStore:
    """In-process memories per session, with their embeddings (swap for a table later)."""

    def __init__(self, embedder: MiniLMEmbedder | None = None) -> None:
        self.embedder = embedder or MiniLMEmbedder()
        self._items: dict[str, list[_Memory]] = {}
        self._vectors: dict[str, np.ndarray] = {}

    def add(self, text: str, *, importance: float = 0.5, session_id: str = "default") -> str:
        """Store one memory and return its id."""
        memory = _Memory(id=uuid.uuid4().hex, text=text, importance=importance)
        vector = self.embedder.encode([text])
        self._items.setdefault(session_id, []).append(memory)
        old = self._vectors.get(session_id)
        self._vectors[session_id] = vector if old is None else np.vstack([old, vector])
        return memory.id

    def count(self, session_id: str = "default") -> int:
        """How many memories ``session_id`` holds."""
        return len(self._items.get(session_id, []))

    def search(self, query: str, *, top_k: int = 5, session_id: str = "default") -> list[MemoryHit]:
        """The ``top_k`` best memories for ``query``, best first."""
        items = self._items.get(session_id, [])
        if not items:
            return []
        return rank(query, self.embedder.encode([query])[0], items, self._vectors[session_id], top_k=top_k)

    async def awrite(self, namespace: str, text: str, *, importance: float = 0.5,
                     metadata: dict[str, Any] | None = None) -> str:
        """``add`` off the event loop (the model runs in a thread)."""
        return await asyncio.to_thread(self.add, text, importance=importance, session_id=namespace)

    async def asearch(self, namespace: str, query: str, *, top_k: int = 5) -> list[MemoryHit]:
        """``search`` off the event loop."""
        return await asyncio.to_thread(self.search, query, top_k=top_k, session_id=namespace)


NAMESPACE_PATTERN = r"^[A-Za-z0-9_.:\-]{1,200}$"
_NAMESPACE = {"type": "string", "pattern": NAMESPACE_PATTERN,
              "description": "Memory namespace; the current session when omitted."}


class MemorySearchTool(BaseTool):
    """The ``memory_search`` tool over one backend, in the call's namespace (default: its session)."""

    function_name = "memory_search"
    description = "Search stored memories for the ones most relevant to a query."
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 4000},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50},
            "namespace": _NAMESPACE,
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, store: MemoryBackend) -> None:
        self.store = store

    async def execute(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """Ranked hits (text, score and its components)."""
        namespace = arguments.get("namespace") or current_session.get()
        hits = await self.store.asearch(namespace, arguments["query"], top_k=arguments.get("top_k", 5))
        return [hit.model_dump() for hit in hits]


class MemoryWriteTool(BaseTool):
    """The ``memory_write`` tool: store one memory (embedded on write) in the call's namespace."""

    function_name = "memory_write"
    description = "Remember a fact for later memory_search calls."
    parameters = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 8000},
            "importance": {"type": "number", "minimum": 0, "maximum": 1},
            "namespace": _NAMESPACE,
        },
        "required": ["text"],
        "additionalProperties": False,
    }

    def __init__(self, store: MemoryBackend) -> None:
        self.store = store

    async def execute(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The stored memory's id and namespace."""
        namespace = arguments.get("namespace") or current_session.get()
        memory_id = await self.store.awrite(namespace, arguments["text"],
                                            importance=float(arguments.get("importance", 0.5)))
        return {"id": memory_id, "namespace": namespace}

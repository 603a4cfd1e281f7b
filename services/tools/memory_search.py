"""``memory_search``: rank stored memories by meaning, word overlap and importance.

score = 0.65 · cosine(query, memory) + 0.25 · |query words ∩ memory words| / |query words|
        + 0.10 · importance
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from services.tools.base import BaseTool
from services.tools.context import current_session
from services.tools.embeddings import MiniLMEmbedder

__all__ = ["MemoryHit", "MemorySearchTool", "MemoryStore", "lexical_overlap", "words"]

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
        cosines = self._vectors[session_id] @ self.embedder.encode([query])[0]
        pairs = zip(items, cosines, strict=True)
        hits = [self._hit(query, item, float(cos)) for item, cos in pairs]
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:top_k]

    @staticmethod
    def _hit(query: str, item: _Memory, cosine: float) -> MemoryHit:
        lexical = lexical_overlap(query, item.text)
        score = W_COSINE * cosine + W_LEXICAL * lexical + W_IMPORTANCE * item.importance
        log.info(
            "memory_search id=%s cosine=%.4f lexical=%.4f importance=%.2f score=%.4f",
            item.id,
            cosine,
            lexical,
            item.importance,
            score,
        )
        return MemoryHit(
            id=item.id,
            text=item.text,
            importance=item.importance,
            cosine=cosine,
            lexical=lexical,
            score=score,
        )


class MemorySearchTool(BaseTool):
    """The ``memory_search`` tool over one ``MemoryStore``, scoped to the current session."""

    function_name = "memory_search"
    description = "Search stored memories for the ones most relevant to a query."
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 4000},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    async def execute(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """Ranked hits (text, score and its components); the model runs off-loop."""
        hits = await asyncio.to_thread(
            self.store.search,
            arguments["query"],
            top_k=arguments.get("top_k", 5),
            session_id=current_session.get(),
        )
        return [hit.model_dump() for hit in hits]

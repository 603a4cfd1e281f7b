"""Agent memories in the database (table ``memory``): written per namespace with their embeddings.

Each memory is embedded once, on write, with the bundled MiniLM model and
stored as unit-length float32 bytes; a search loads the namespace's vectors
and ranks them with ``memory_search.rank`` (cosine, word overlap, importance).
Methods taking a session only flush (the caller commits); the ``awrite`` /
``asearch`` pair used by the tools opens and commits its own session.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.tools.embeddings import MiniLMEmbedder
from services.tools.memory_search import NAMESPACE_PATTERN, MemoryHit, rank
from shared.db.models import MemoryRow
from shared.db.session import session_scope
from shared.errors import NotFound

__all__ = ["DbMemoryStore", "MemoryCreate", "MemoryPage", "MemoryRead", "MemorySearchRequest",
           "MemorySearchResponse", "NAMESPACE_PATTERN"]


class MemoryCreate(BaseModel):
    """One memory to store."""

    text: str = Field(min_length=1, max_length=8000)
    importance: float = Field(0.5, ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)


class MemoryRead(BaseModel):
    """A stored memory (its embedding stays in the database)."""

    id: str
    namespace: str
    text: str
    importance: float
    metadata: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, row: MemoryRow) -> MemoryRead:
        """The public view of a row."""
        return cls(id=str(row.id), namespace=row.namespace, text=row.text, importance=row.importance,
                   metadata=dict(row.meta or {}), created_at=row.created_at)


class MemoryPage(BaseModel):
    """A page of a namespace's memories, newest first."""

    namespace: str
    total: int
    memories: list[MemoryRead]


class MemorySearchRequest(BaseModel):
    """A query and how many hits to return."""

    query: str = Field(min_length=1, max_length=4000)
    top_k: int = Field(5, ge=1, le=50)


class MemorySearchResponse(BaseModel):
    """Hits best first, each with its score components."""

    namespace: str
    hits: list[MemoryHit]


class DbMemoryStore:
    """Memories per namespace in the ``memory`` table; the embedder loads on first use."""

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], embedder: MiniLMEmbedder | None = None) -> None:
        self.sessionmaker = sessionmaker
        self.embedder = embedder or MiniLMEmbedder()

    async def _embed(self, text: str) -> np.ndarray:
        vectors = await asyncio.to_thread(self.embedder.encode, [text])
        return np.asarray(vectors[0], dtype=np.float32)

    async def add(self, session: AsyncSession, namespace: str, body: MemoryCreate) -> MemoryRead:
        """Embed and store one memory."""
        vector = await self._embed(body.text)
        row = MemoryRow(namespace=namespace, text=body.text, importance=body.importance,
                        embedding=np.asarray(vector, dtype="<f4").tobytes(), meta=body.metadata)
        session.add(row)
        await session.flush()
        return MemoryRead.of(row)

    async def page(self, session: AsyncSession, namespace: str, *, limit: int = 50, offset: int = 0) -> MemoryPage:
        """A namespace's memories, newest first."""
        total = await session.scalar(select(func.count()).select_from(MemoryRow)
                                     .where(MemoryRow.namespace == namespace))
        rows = await session.scalars(select(MemoryRow).where(MemoryRow.namespace == namespace)
                                     .order_by(MemoryRow.created_at.desc(), MemoryRow.id).limit(limit).offset(offset))
        return MemoryPage(namespace=namespace, total=int(total or 0), memories=[MemoryRead.of(r) for r in rows])

    async def remove(self, session: AsyncSession, namespace: str, memory_id: uuid.UUID) -> None:
        """Delete one memory; 404 when the namespace holds no such memory."""
        result = await session.execute(delete(MemoryRow).where(MemoryRow.namespace == namespace,
                                                               MemoryRow.id == memory_id))
        if not getattr(result, "rowcount", 0):
            raise NotFound(f"no memory {memory_id} in namespace {namespace!r}")

    async def search(self, session: AsyncSession, namespace: str, query: str, *, top_k: int = 5) -> list[MemoryHit]:
        """The ``top_k`` best memories of ``namespace`` for ``query``."""
        rows = list(await session.scalars(select(MemoryRow).where(MemoryRow.namespace == namespace)))
        if not rows:
            return []
        vectors = np.stack([np.frombuffer(r.embedding, dtype="<f4") for r in rows])
        return rank(query, await self._embed(query), rows, vectors, top_k=top_k)

    async def awrite(self, namespace: str, text: str, *, importance: float = 0.5,
                     metadata: dict[str, Any] | None = None) -> str:
        """Store one memory in its own transaction (the ``memory_write`` tool)."""
        async with session_scope(self.sessionmaker) as session:
            read = await self.add(session, namespace, MemoryCreate(text=text, importance=importance,
                                                                   metadata=metadata or {}))
        return read.id

    async def asearch(self, namespace: str, query: str, *, top_k: int = 5) -> list[MemoryHit]:
        """Search in its own session (the ``memory_search`` tool)."""
        async with session_scope(self.sessionmaker) as session:
            return await self.search(session, namespace, query, top_k=top_k)

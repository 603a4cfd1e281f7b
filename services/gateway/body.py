"""What the two upstream clients' responses share: line and whole-body reading over ``iter_raw``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator

__all__ = ["StreamedBody"]


class StreamedBody(ABC):
    """A response body read chunk by chunk; subclasses supply ``iter_raw``."""

    content: bytes = b""

    @abstractmethod
    def iter_raw(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive."""

    async def aiter_lines(self) -> AsyncIterator[str]:
        """Body lines without their line endings (for server-sent events)."""
        pending = b""
        async for data in self.iter_raw():
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.rstrip(b"\r").decode("utf-8")
        if pending:
            yield pending.rstrip(b"\r").decode("utf-8")

    async def aread(self) -> bytes:
        """The whole body."""
        self.content = b"".join([part async for part in self.iter_raw()])
        return self.content

"""SandboxPool: pre-created bubblewrap sandboxes behind an asyncio queue.

Stable API (other services build on it)::

    pool = SandboxPool(pool_size=16, limits=SandboxLimits(), acquire_timeout_s=30.0)
    await pool.start()                        # pre-creates every slot
    result = await pool.execute("print(1)", language="python", timeout_s=5)
    async with pool.session() as slot:        # keep one sandbox across several runs
        await slot.run("echo hi > a.txt", language="bash")
        data = slot.read_file("a.txt")        # no-follow, size-capped host read
    await pool.close()

``acquire()`` waits at most ``acquire_timeout_s`` and raises
``SandboxUnavailable`` (503). ``release()`` kills every process of the slot's
uid, waits until none is left, and wipes the work dir; a slot that cannot be
reset, or whose sandbox failed to start, is destroyed and replaced.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from services.tools.errors import SandboxUnavailable
from services.tools.results import ExecutionResult
from services.tools.sandbox_limits import SandboxLimits
from services.tools.sandbox_profile import bwrap_path
from services.tools.sandbox_slot import SandboxSlot
from services.tools.sandbox_uids import lease_uid
from shared.errors import SandboxError

__all__ = ["SandboxPool", "sandbox_wanted"]

log = logging.getLogger(__name__)


def sandbox_wanted(mode: str) -> bool:
    """Whether to start sandboxes under the ``tools_sandbox`` setting: always when "required" (a
    missing bubblewrap then fails the start), only if bwrap is installed when "optional"."""
    return mode == "required" or shutil.which("bwrap") is not None


class SandboxPool:
    """A fixed number of isolated slots; acquire with a timeout, release resets."""

    def __init__(
        self,
        pool_size: int = 16,
        *,
        limits: SandboxLimits | None = None,
        acquire_timeout_s: float = 30.0,
        uid_base: int = 20000,
        base_dir: Path | None = None,
    ) -> None:
        self.pool_size = pool_size
        self.limits = limits or SandboxLimits()
        self.acquire_timeout_s = acquire_timeout_s
        self.uid_base = uid_base
        self._base_dir = base_dir
        self._root: Path | None = None
        self._free: asyncio.Queue[SandboxSlot] = asyncio.Queue()
        self._slots: dict[int, SandboxSlot] = {}
        self._leased: set[int] = set()
        self._next_index = 0
        self.replaced = 0

    @property
    def free(self) -> int:
        """How many slots are idle right now."""
        return self._free.qsize()

    def slots(self) -> list[SandboxSlot]:
        """Every live slot, leased or idle."""
        return list(self._slots.values())

    async def start(self) -> SandboxPool:
        """Check bwrap and pre-create ``pool_size`` slots."""
        bwrap_path()
        self._root = Path(tempfile.mkdtemp(prefix="trajforge-sandbox-", dir=self._base_dir))
        self._root.chmod(0o711)  # slot uids must traverse to their own dirs
        for _ in range(self.pool_size):
            self._free.put_nowait(self._new_slot())
        return self

    def _new_slot(self) -> SandboxSlot:
        assert self._root is not None, "call start() first"
        index, self._next_index = self._next_index, self._next_index + 1
        slot = SandboxSlot(
            index=index, lease=lease_uid(self.uid_base), root=self._root, limits=self.limits
        )
        slot.prepare()
        self._slots[index] = slot
        return slot

    async def acquire(self, timeout_s: float | None = None) -> SandboxSlot:
        """A free slot, waiting at most ``timeout_s`` (default ``acquire_timeout_s``)."""
        wait = self.acquire_timeout_s if timeout_s is None else timeout_s
        try:
            slot = await asyncio.wait_for(self._free.get(), wait)
        except TimeoutError:
            raise SandboxUnavailable(
                f"no sandbox free within {wait:g} s; retry later", retry_after_s=1.0
            ) from None
        self._leased.add(slot.index)
        return slot

    async def release(self, slot: SandboxSlot) -> None:
        """Reset ``slot`` and return it to the pool, or replace it if the reset fails."""
        if slot.index not in self._leased or self._slots.get(slot.index) is not slot:
            raise SandboxError(f"slot {slot.index} is not leased from this pool")
        self._leased.discard(slot.index)
        if await slot.reset():
            self._free.put_nowait(slot)
            return
        log.warning("replacing sandbox slot %d", slot.index)
        self._slots.pop(slot.index, None)
        try:
            await slot.destroy()
        except Exception:  # a slot we cannot clean must not cost the pool a slot
            log.exception("sandbox slot %d could not be destroyed", slot.index)
        self.replaced += 1
        self._free.put_nowait(self._new_slot())

    @asynccontextmanager
    async def session(self, timeout_s: float | None = None) -> AsyncIterator[SandboxSlot]:
        """Lease one slot for several runs; it is reset however the block exits."""
        slot = await self.acquire(timeout_s)
        try:
            yield slot
        finally:
            await asyncio.shield(self.release(slot))

    async def execute(
        self, code: str, *, language: str = "python", timeout_s: float | None = None
    ) -> ExecutionResult:
        """Acquire, run ``code`` once, release."""
        async with self.session() as slot:
            return await slot.run(code, language=language, timeout_s=timeout_s)

    async def close(self) -> None:
        """Destroy every slot and the pool's directory."""
        for slot in list(self._slots.values()):
            await slot.destroy()
        self._slots.clear()
        self._leased.clear()
        self._free = asyncio.Queue()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    async def __aenter__(self) -> SandboxPool:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

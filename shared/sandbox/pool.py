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
cgroup and uid, waits until none is left, mounts a fresh tmpfs and checks
that nothing survived (``SandboxSlot.last_evidence``); a slot that cannot be
reset, or whose sandbox failed to start, is destroyed and replaced, so the
pool is back at full size after every release.

``SandboxPool.from_settings`` builds the one profile every service uses.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from shared.cgroups import CgroupHost, SlotCgroup, detect_cgroups, pool_group_name
from shared.errors import SandboxError, SandboxUnavailable
from shared.sandbox import check as sandbox_check
from shared.sandbox.limits import SandboxLimits
from shared.sandbox.profile import bwrap_path
from shared.sandbox.result import ExecutionResult
from shared.sandbox.seccomp import seccomp_supported
from shared.sandbox.slot import SandboxSlot
from shared.sandbox.uids import lease_uid
from shared.settings import Settings

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
        cgroups: bool = True,
        seccomp: bool = True,
        require_protections: bool = False,
    ) -> None:
        self.pool_size = pool_size
        self.limits = limits or SandboxLimits()
        self.acquire_timeout_s = acquire_timeout_s
        self.uid_base = uid_base
        self._base_dir = base_dir
        self._want_cgroups = cgroups
        #: The cgroup layout in use (None: the host offers none, or disabled).
        self.cgroups: CgroupHost | None = None
        self.seccomp = seccomp and seccomp_supported()
        self._group = pool_group_name()
        #: Refuse to start unless every protection of ``sandbox_check`` is active.
        self.require_protections = require_protections
        self._root: Path | None = None
        self._free: asyncio.Queue[SandboxSlot] = asyncio.Queue()
        self._slots: dict[int, SandboxSlot] = {}
        self._leased: set[int] = set()
        self._next_index = 0
        self.replaced = 0

    @classmethod
    def from_settings(
        cls, settings: Settings, *, pool_size: int | None = None, uid_base: int | None = None
    ) -> SandboxPool:
        """The pool every service that runs user code uses, limits from ``TRAJFORGE_TOOLS_*``."""
        limits = SandboxLimits(
            memory_bytes=settings.tools_memory_bytes,
            cpu_s=settings.tools_cpu_s,
            cpu_cores=settings.tools_cpu_cores,
            max_processes=settings.tools_max_processes,
            tmpfs_bytes=settings.tools_tmpfs_bytes,
            tmpfs_inodes=settings.tools_tmpfs_inodes,
        )
        return cls(
            pool_size or settings.tools_pool_size,
            limits=limits,
            acquire_timeout_s=settings.tools_acquire_timeout_s,
            uid_base=settings.tools_uid_base if uid_base is None else uid_base,
            require_protections=settings.env == "prod",
        )

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
        self.cgroups = self._usable_cgroups() if self._want_cgroups else None
        self._root = Path(tempfile.mkdtemp(prefix="trajforge-sandbox-", dir=self._base_dir))
        self._root.chmod(0o711)  # slot uids must traverse to their own dirs
        try:
            for _ in range(self.pool_size):
                self._free.put_nowait(self._new_slot())
            if self.require_protections:
                sandbox_check.require_protections(await sandbox_check.check_protections(self))
        except BaseException:
            await self.close()
            raise
        return self

    def _usable_cgroups(self) -> CgroupHost | None:
        """The host's cgroups if a slot group can really be made there (v2 may refuse, e.g. when
        the service's own group holds processes and so cannot delegate controllers)."""
        host = detect_cgroups()
        if host is None:
            return None
        try:
            SlotCgroup.create(host, parent=self._group, name="probe", limits=self.limits).destroy()
        except SandboxError as exc:
            log.warning("sandbox cgroups unavailable, running on rlimits only: %s", exc)
            return None
        return host

    def _new_slot(self) -> SandboxSlot:
        assert self._root is not None, "call start() first"
        index, self._next_index = self._next_index, self._next_index + 1
        lease = lease_uid(self.uid_base)
        try:
            slot = SandboxSlot(
                index=index,
                lease=lease,
                root=self._root,
                limits=self.limits,
                cgroups=self.cgroups,
                cgroup_parent=self._group,
                seccomp=self.seccomp,
            )
        except BaseException:
            lease.release()
            raise
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

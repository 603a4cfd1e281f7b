"""The functions service's domain: packages and the component pools that run them.

A call names its package and component; the pool of that component version
(kind, package, classpath, runtime) is started on first use and shared by
every later caller. What the worker answers becomes the contract's output; a
call that got no answer (timeout, crash, OOM kill, hang) becomes the FAILED
fallback with the cause: for a rollout the ``ROLLOUT_ERROR:`` message, for a
reward a FAILED ``RewardOutput``. Only calls that cannot run at all raise: an
unknown package (404), a package still building or failed (409), a classpath
the package does not have or that does not load (422).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from typing import Any, Literal

from services.functions.errors import ComponentLoadError, PackageNotReady
from services.functions.instance import CallFailed
from services.functions.packages import PackageStore, package_pythonpath
from services.functions.pool import ComponentPool
from shared.cgroups import CgroupHost, SlotCgroup, detect_cgroups, pool_group_name
from shared.clients.functions import FunctionPackage
from shared.schema.functions import (
    RewardFunctionComponent,
    RewardInput,
    RewardOutput,
    RolloutFunctionComponent,
    RolloutInput,
    RolloutOutput,
    TaskStatus,
    rollout_error_output,
)
from shared.settings import Settings

__all__ = ["FunctionsService", "pool_key"]

Kind = Literal["rollout", "reward"]


def pool_key(kind: Kind, package_id: str, component: RolloutFunctionComponent) -> str:
    """The component version: what decides which instances a call may share."""
    version = {"kind": kind, "package": package_id, "classpath": _dotted(component.fcmodel.classpath),
               "runtime": component.runtime.model_dump(mode="json")}
    digest = hashlib.sha256(json.dumps(version, sort_keys=True).encode()).hexdigest()[:12]
    return f"{kind}-{digest}"


def _sweep_groups(host: CgroupHost, parent: str) -> None:
    """Kill and remove every group under ``parent`` (a loaded host may exit a killed task slowly)."""
    names = {child.name for base in host.dirs.values() if (base / parent).is_dir()
             for child in (base / parent).iterdir() if child.is_dir()}
    for name in sorted(names):
        group = SlotCgroup(host=host, name=name, dirs={c: base / parent / name for c, base in host.dirs.items()
                                                       if (base / parent / name).is_dir()})
        group.kill_until_empty(timeout_s=5.0)
        group.destroy()
    for base in host.dirs.values():
        with contextlib.suppress(OSError):
            (base / parent).rmdir()


def _dotted(classpath: str) -> str:
    return classpath.replace(":", ".")


class FunctionsService:
    """Packages on disk and one pool per component version, for the life of the app."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = PackageStore(settings)
        self.pools: dict[str, ComponentPool] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._cgroups = detect_cgroups()
        self._group_parent = pool_group_name("functions")

    async def close(self) -> None:
        """Stop every pool and build, then remove any instance cgroup a slow exit left behind."""
        await asyncio.gather(*(p.close() for p in self.pools.values()), return_exceptions=True)
        self.pools.clear()
        await self.store.close()
        if self._cgroups is not None:
            await asyncio.to_thread(_sweep_groups, self._cgroups, self._group_parent)

    async def ready_package(self, package_id: str) -> FunctionPackage:
        """The package once built; 409 while it cannot run (build failed)."""
        package = await self.store.wait(package_id)
        if package.status != "ready":
            raise PackageNotReady(f"package {package_id} is {package.status}: {package.error or 'not built yet'}",
                                  param="fcmodel.package_id")
        return package

    async def pool_for(self, kind: Kind, package_id: str, component: RolloutFunctionComponent) -> ComponentPool:
        """The running pool of this component version, started if it is the first call."""
        key = pool_key(kind, package_id, component)
        await self._stop_idle_pools(keep=key)
        pool = self.pools.get(key)
        if pool is not None:
            return pool
        async with self._locks.setdefault(key, asyncio.Lock()):
            pool = self.pools.get(key)
            if pool is not None:
                return pool
            package = await self.ready_package(package_id)
            classpath = _dotted(component.fcmodel.classpath)
            if classpath not in package.classpaths:
                found = ", ".join(package.classpaths) or "none"
                raise ComponentLoadError(f"package {package_id} has no processor {classpath!r} (found: {found})",
                                         param="fcmodel.classpath")
            deps = self.store.deps_dir(package.requirements_hash)
            pool = ComponentPool(key=key, kind=kind, name=component.name, classpath=classpath,
                                 runtime=component.runtime,
                                 pythonpath=package_pythonpath(self.store.workspace(package_id), deps),
                                 scratch_root=self.store.root / "scratch", cgroups=self._cgroups,
                                 group_parent=self._group_parent, settings=self.settings)
            await pool.start()
            self.pools[key] = pool
            return pool

    async def _stop_idle_pools(self, *, keep: str) -> None:
        """Stop pools unused for ``functions_pool_idle_ttl_s`` (a job's last call ended long ago)."""
        now = time.monotonic()
        idle = [k for k, p in self.pools.items()
                if k != keep and p.idle_for(now) > self.settings.functions_pool_idle_ttl_s]
        for k in idle:
            await self.pools.pop(k).close()

    async def call_rollout(self, package_id: str, component: RolloutFunctionComponent,
                           inp: RolloutInput) -> RolloutOutput:
        """One rollout on the component's pool; a call without an answer is the FAILED fallback."""
        pool = await self.pool_for("rollout", package_id, component)
        started = time.perf_counter()
        try:
            answer = await pool.call(inp.model_dump(mode="json"), timeout_s=component.timeout)
        except CallFailed as exc:
            return rollout_error_output(inp, str(exc), metrics={"latency_s": time.perf_counter() - started})
        if "error" in answer:
            return rollout_error_output(inp, str(answer["error"]),
                                        metrics={"latency_s": time.perf_counter() - started})
        return RolloutOutput.model_validate(answer["output"])

    async def call_reward(self, package_id: str, component: RewardFunctionComponent,
                          inp: RewardInput) -> RewardOutput:
        """One score on the component's pool; a call without an answer is a FAILED output."""
        pool = await self.pool_for("reward", package_id, component)
        try:
            answer = await pool.call(inp.model_dump(mode="json"), timeout_s=component.timeout)
        except CallFailed as exc:
            return RewardOutput(status=TaskStatus.FAILED, error=str(exc))
        if "error" in answer:
            return RewardOutput(status=TaskStatus.FAILED, error=str(answer["error"]))
        return RewardOutput.model_validate(answer["output"])

    def pool_stats(self) -> list[dict[str, Any]]:
        """Every pool's instances, load and scale events."""
        return [pool.stats() for pool in self.pools.values()]

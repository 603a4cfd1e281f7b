"""Client of the functions service: upload a workspace, watch its build, call its components.

    async with await FunctionsClient.open(endpoints, api_key=key) as fc:
        package = await fc.upload_dir(Path("my_workspace"))      # functions/ + requirements.txt
        package = await fc.wait_built(package.package_id)
        component = RolloutFunctionComponent(name="my-rollout", fcmodel=FunctionComponentModel(
            package_id=package.package_id, classpath="functions.rollout.my_rollout.MyRolloutProcessor"))
        out = await fc.call_rollout(component, RolloutInput(...))

A component call is never retried here: a rollout may have had side effects. Its failures come
back as data (``status=FAILED`` with the cause), not as raised errors; a 4xx is raised only for
a call that cannot run at all (unknown package, a build that failed, a classpath that does not
load).
"""

from __future__ import annotations

import asyncio
import io
import time
import zipfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from shared.clients.services import ServiceClient
from shared.errors import UpstreamTimeout
from shared.schema.functions import (
    RewardFunctionComponent,
    RewardInput,
    RewardOutput,
    RolloutFunctionComponent,
    RolloutInput,
    RolloutOutput,
)

__all__ = ["BuildStatus", "FunctionPackage", "FunctionsClient", "zip_workspace"]

BuildStatus = Literal["building", "ready", "failed"]
#: Directories never packed from a workspace (caches and environments are rebuilt by the server).
_SKIP_DIRS = frozenset({"__pycache__", ".git", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache"})


class FunctionPackage(BaseModel):
    """An uploaded workspace: its content address, its dependency build, what it offers."""

    package_id: str
    sha256: str
    size_bytes: int
    requirements_hash: str
    status: BuildStatus
    error: str | None = None
    #: Processor classes found in ``functions/`` once the build has imported it.
    classpaths: list[str] = Field(default_factory=list)
    created_at: float = 0.0
    built_at: float | None = None


def zip_workspace(root: Path) -> bytes:
    """The workspace at ``root`` as zip bytes (``functions/`` and ``requirements.txt`` at the top)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.is_dir() or any(part in _SKIP_DIRS for part in rel.parts) or path.suffix == ".pyc":
                continue
            # A fixed timestamp: the same files give the same bytes, hence the same package id.
            info = zipfile.ZipInfo(rel.as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


class FunctionsClient(ServiceClient):
    """The functions service: packages, their builds, and calls to their components."""

    service = "functions"

    async def upload(self, data: bytes) -> FunctionPackage:
        """``POST /v1/functions`` with a zipped workspace; the build starts (or is reused) at once."""
        body = await self.request("POST", "/v1/functions", content=data, retry=False,
                                  headers={"content-type": "application/zip"})
        return FunctionPackage.model_validate(body)

    async def upload_dir(self, root: Path) -> FunctionPackage:
        """Zip the workspace at ``root`` and upload it."""
        return await self.upload(await asyncio.to_thread(zip_workspace, root))

    async def get(self, package_id: str) -> FunctionPackage:
        """A package's build status."""
        return FunctionPackage.model_validate(await self.request("GET", f"/v1/functions/{package_id}"))

    async def log(self, package_id: str) -> str:
        """The package's build log (pip's output, the import check)."""
        body = await self.request("GET", f"/v1/functions/{package_id}/log")
        return body.decode() if isinstance(body, bytes) else str(body or "")

    async def wait_built(self, package_id: str, *, timeout_s: float = 600.0, poll_s: float = 0.2) -> FunctionPackage:
        """Poll until the build is ``ready`` or ``failed``; ``UpstreamTimeout`` past ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            package = await self.get(package_id)
            if package.status != "building":
                return package
            if time.monotonic() > deadline:
                raise UpstreamTimeout(f"package {package_id} still building after {timeout_s} s")
            await asyncio.sleep(poll_s)

    async def call_rollout(self, component: RolloutFunctionComponent, inp: RolloutInput) -> RolloutOutput:
        """Run one rollout on the component's instances (``POST /v1/functions/{package_id}/rollout``)."""
        out = await self._call("rollout", component, inp.model_dump(mode="json"))
        return RolloutOutput.model_validate(out)

    async def call_reward(self, component: RewardFunctionComponent, inp: RewardInput) -> RewardOutput:
        """Score one agent output on the component's instances (``POST /v1/functions/{package_id}/reward``)."""
        out = await self._call("reward", component, inp.model_dump(mode="json"))
        return RewardOutput.model_validate(out)

    async def _call(self, kind: str, component: RolloutFunctionComponent, inp: dict[str, Any]) -> Any:
        package_id = component.fcmodel.package_id
        if not package_id:
            raise ValueError(f"component {component.name!r} has no fcmodel.package_id; upload its zipdir first")
        body = {"component": component.model_dump(mode="json"), "input": inp}
        # The server ends the call at component.timeout; the margin covers queueing and transfer.
        return await self.request("POST", f"/v1/functions/{package_id}/{kind}", json=body, retry=False,
                                  timeout_s=component.timeout + 60.0)

    async def pools(self) -> list[dict[str, Any]]:
        """Every component pool with its instances, in-flight and queued calls, scale events."""
        out = await self.request("GET", "/v1/functions/pools")
        return list(out.get("pools") or [])

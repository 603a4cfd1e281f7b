"""The OPD client: the reference's ``AgenticRL().run(...)`` against trajforge's ``/v1/opd/jobs``.

    from shared.agentic import AgenticRL, DataSourceType, TrainingDataset, ValidationDataset
    from shared.functions import FunctionComponentModel, RolloutFunctionComponent, RewardFunctionComponent

    client = AgenticRL("http://127.0.0.1:8000", api_key="tf_...")
    result = await client.run(job_name="my-opd", model="student", teacher_model="teacher",
                              training_datasets=[TrainingDataset(file_name="data/train.jsonl")],
                              validation_datasets=[ValidationDataset(file_name="data/validation.jsonl")],
                              functions=[RolloutFunctionComponent(...), RewardFunctionComponent(...)],
                              hyper_parameters={"rounds": 1, "group_size": 2}, resources={...})
    job_id = result.output.job_id

Dataset files are read here (JSONL, one prompt row a line) and sent with the job;
a component whose ``fcmodel`` has a ``zipdir`` and no ``package_id`` is uploaded
first (``POST /v1/functions``) and sent with the package id the upload returned.
``run`` answers like the reference: ``status_code`` 200 and ``output.job_id`` on
success, else the server's status code and message (nothing raised).
"""

from __future__ import annotations

import asyncio
import json
import time
from enum import StrEnum
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field

from shared.clients.functions import zip_workspace
from shared.errors import UpstreamTimeout
from shared.schema.functions import RewardFunctionComponent, RolloutFunctionComponent

__all__ = ["AgenticRL", "DataSourceType", "OpdOutput", "OpdResult", "TrainingDataset", "ValidationDataset"]

_TERMINAL = ("succeeded", "failed", "cancelled")


class DataSourceType(StrEnum):
    """Where a dataset's rows come from: a JSONL file read by the client (the reference's ``FILE_ID``)."""

    FILE_ID = "file_id"


class TrainingDataset(BaseModel):
    """A training set: a JSONL file of prompt rows."""

    data_source_type: DataSourceType = DataSourceType.FILE_ID
    file_name: str

    def wire(self) -> dict[str, Any]:
        """The dataset as the job request carries it: its rows, and where they came from."""
        lines = Path(self.file_name).read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        return {"data_source_type": self.data_source_type.value, "file_name": self.file_name, "rows": rows}


class ValidationDataset(TrainingDataset):
    """A validation set: rolled out and scored every round."""


class OpdOutput(BaseModel):
    """What a submitted job answered."""

    job_id: str
    status: str
    job: dict[str, Any] = Field(default_factory=dict)


class OpdResult(BaseModel):
    """``run``'s answer: the HTTP status, the job on success, the server's message otherwise."""

    status_code: int
    output: OpdOutput | None = None
    message: str | None = None
    param: str | None = None


class AgenticRL:
    """Submits and follows OPD jobs (``transport`` lets a test reach an app in this process)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 120.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s,
                                       transport=transport)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def _component(self, comp: RolloutFunctionComponent) -> dict[str, Any]:
        kind = "reward" if isinstance(comp, RewardFunctionComponent) else "rollout"
        body = {"type": kind, **comp.model_dump(mode="json")}
        fcmodel = body["fcmodel"]
        if fcmodel.get("zipdir") and not fcmodel.get("package_id"):
            data = await asyncio.to_thread(zip_workspace, Path(fcmodel["zipdir"]))
            resp = await self._http.post("/v1/functions", content=data, headers={"content-type": "application/zip"})
            resp.raise_for_status()
            fcmodel["package_id"] = resp.json()["package_id"]
        fcmodel.pop("zipdir", None)  # a path on this machine means nothing to the server
        return body

    async def run(self, *, job_name: str, model: str, training_datasets: list[TrainingDataset],
                  functions: list[RolloutFunctionComponent], teacher_model: str | None = None,
                  validation_datasets: list[ValidationDataset] | None = None,
                  hyper_parameters: dict[str, Any] | None = None,
                  resources: dict[str, Any] | None = None) -> OpdResult:
        """Submit one OPD job (the reference's arguments); see the module docstring for the answer."""
        body = {"job_name": job_name, "model": model, "teacher_model": teacher_model,
                "training_datasets": [d.wire() for d in training_datasets],
                "validation_datasets": [d.wire() for d in validation_datasets or []],
                "functions": [await self._component(f) for f in functions],
                "hyper_parameters": dict(hyper_parameters or {}), "resources": dict(resources or {})}
        resp = await self._http.post("/v1/opd/jobs", json=body)
        if resp.status_code >= 400:
            error = resp.json() if resp.headers.get("content-type", "").endswith("json") else {}
            return OpdResult(status_code=resp.status_code, param=error.get("param"),
                             message=str(error.get("detail") or error.get("message") or resp.text))
        job = resp.json()
        # The reference answers 200 for an accepted submission; the server's 202 is the same news.
        return OpdResult(status_code=200, output=OpdOutput(job_id=job["id"], status=job["status"], job=job))

    async def get(self, job_id: str) -> dict[str, Any]:
        """The job: status, and each round's rollout jobs, status and metrics."""
        resp = await self._http.get(f"/v1/opd/jobs/{job_id}")
        resp.raise_for_status()
        out: dict[str, Any] = resp.json()
        return out

    async def wait(self, job_id: str, *, timeout_s: float = 3600.0, poll_s: float = 1.0) -> dict[str, Any]:
        """Poll until the job is succeeded, failed or cancelled; ``UpstreamTimeout`` past ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = await self.get(job_id)
            if job["status"] in _TERMINAL:
                return job
            if time.monotonic() > deadline:
                raise UpstreamTimeout(f"OPD job {job_id} still {job['status']} after {timeout_s} s")
            await asyncio.sleep(poll_s)

"""``GET /v1/rollouts/{id}/export``: a rollout job as a Parquet or JSONL download."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from services.rollout.deps import reward_client
from services.rollout.export import ExportFormat
from services.rollout.export_store import export_job
from shared.web import SessionDep, StateDep

__all__ = ["export_router"]

export_router = APIRouter(tags=["rollout"])

_MEDIA_TYPES = {"parquet": "application/vnd.apache.parquet", "jsonl": "application/x-ndjson"}


@export_router.get("/v1/rollouts/{job_id}/export", response_class=FileResponse)
async def export_rollout(job_id: uuid.UUID, session: SessionDep, state: StateDep, request: Request,
                         format: Annotated[ExportFormat, Query()] = "parquet") -> FileResponse:
    """Download the job's trajectories: token-level Parquet or JSONL of messages."""
    async with reward_client(state, request) as rewards:
        path = await export_job(session, rewards, job_id, fmt=format)
    return FileResponse(path, media_type=_MEDIA_TYPES[format], filename=f"rollout-{job_id}.{format}",
                        background=BackgroundTask(path.unlink, missing_ok=True))

"""``/v1/opd/jobs``: on-policy distillation jobs (thin routes over ``services.rollout.opd``)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request

from services.rollout import opd
from services.rollout.opd_schemas import OpdJobCreate, OpdJobRead
from shared.web import DispatcherDep, SessionDep, StateDep

__all__ = ["opd_router"]

opd_router = APIRouter(tags=["opd"])


@opd_router.post("/v1/opd/jobs", status_code=202, response_model=OpdJobRead)
async def create_opd_job(body: OpdJobCreate, request: Request, session: SessionDep, dispatcher: DispatcherDep,
                         state: StateDep) -> OpdJobRead:
    """Start an OPD job: rounds of training and validation rollouts, rewards, teacher scoring."""
    auth = request.headers.get("authorization", "")
    key = auth[7:].strip() if auth[:7].lower() == "bearer " else None
    return await opd.create_opd_job(session, dispatcher, body, state, api_key=key)


@opd_router.get("/v1/opd/jobs/{job_id}", response_model=OpdJobRead)
async def read_opd_job(job_id: uuid.UUID, session: SessionDep) -> OpdJobRead:
    """An OPD job's status and each round's rollout jobs, status and metrics."""
    return await opd.read_opd_job(session, job_id)


@opd_router.post("/v1/opd/jobs/{job_id}/cancel", response_model=OpdJobRead)
async def cancel_opd_job(job_id: uuid.UUID, session: SessionDep) -> OpdJobRead:
    """Stop the job: the running round's rollouts are cancelled and no further round starts."""
    return await opd.cancel_opd_job(session, job_id)

"""Python client for trajforge's REST API: ``Client`` (sync) and ``AsyncClient`` (async).

Both share one set of endpoint methods (``_Endpoints``); the sync client
returns values, the async client returns awaitables of the same values.
Errors come back as the server's ``TrajforgeError`` subclass (matched by its
stable ``code``), so callers catch the same classes everywhere.

    from shared.client import Client
    with Client("http://127.0.0.1:8000", api_key="tf_...") as tf:
        print(tf.health())
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from shared import errors as _errors
from shared.errors import TrajforgeError

__all__ = ["AsyncClient", "Client", "ServerEvent", "error_from_response", "parse_sse"]


def _all_error_classes() -> dict[str, type[TrajforgeError]]:
    out: dict[str, type[TrajforgeError]] = {}
    stack: list[type[TrajforgeError]] = [TrajforgeError]
    while stack:
        cls = stack.pop()
        out.setdefault(cls.code, cls)
        stack.extend(cls.__subclasses__())
    return out


def error_from_response(response: httpx.Response) -> TrajforgeError:
    """The ``TrajforgeError`` a problem-details or OpenAI error body describes."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    code = str(inner.get("code") or "")
    message = str(inner.get("message") or inner.get("detail") or response.text[:500] or response.reason_phrase)
    cls = _all_error_classes().get(code)
    if cls is None:
        cls = next((c for c in _all_error_classes().values() if c.status_code == response.status_code),
                   _errors.TrajforgeError)
    retry = response.headers.get("retry-after")
    return cls(message, details={"status": response.status_code, "body": body},
               retry_after_s=float(retry) if retry and retry.replace(".", "", 1).isdigit() else None)


def _result(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise error_from_response(response)
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    return response.content


@dataclass(frozen=True, slots=True)
class ServerEvent:
    """One server-sent event: its name and its data (parsed JSON, or the raw text when it is not JSON)."""

    event: str
    data: Any
    id: str | None = None


def _event(name: str, data_lines: list[str], event_id: str | None) -> ServerEvent:
    text = "\n".join(data_lines)
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    return ServerEvent(event=name or "message", data=data, id=event_id)


def parse_sse(lines: Iterable[str]) -> Iterator[ServerEvent]:
    """Server-sent events from a stream of text lines (comments skipped, multi-line data joined)."""
    name, event_id = "", None
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield _event(name, data, event_id)
            name, data = "", []
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            event_id = value
    if data:  # a stream cut before its blank line still delivers the last event
        yield _event(name, data, event_id)


class _Endpoints(ABC):
    """Endpoint methods shared by both clients; ``_call`` is sync or async."""

    @abstractmethod
    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request through the client's transport."""

    def health(self) -> Any:
        """Liveness of the server."""
        return self._call("GET", "/healthz")

    def ready(self) -> Any:
        """Readiness (database, Redis) of the server."""
        return self._call("GET", "/readyz")

    def upload_dataset(self, name: str, data: bytes | str | Path) -> Any:
        """Upload JSONL (bytes, or a file path) as a dataset."""
        content = Path(data).read_bytes() if isinstance(data, (str, Path)) else data
        return self._call("POST", "/v1/datasets", params={"name": name}, content=content,
                          headers={"content-type": "application/x-ndjson"})

    def get_dataset(self, dataset_id: str) -> Any:
        """A dataset's metadata."""
        return self._call("GET", f"/v1/datasets/{dataset_id}")

    def dataset_rows(self, dataset_id: str, *, offset: int = 0, limit: int = 100) -> Any:
        """A page of a dataset's rows."""
        return self._call("GET", f"/v1/datasets/{dataset_id}/rows", params={"offset": offset, "limit": limit})

    def score(self, trajectories: list[Any], *, spec: dict[str, Any] | None = None,
              ground_truths: list[Any] | None = None, processors: list[dict[str, Any]] | None = None) -> Any:
        """Score trajectories with a reward spec; each result has score, metrics, provenance and status."""
        body: dict[str, Any] = {"trajectories": trajectories, "processors": processors or []}
        if spec is not None:
            body["spec"] = spec
        if ground_truths is not None:
            body["ground_truths"] = ground_truths
        return self._call("POST", "/v1/rewards/score", json=body)

    def advantages(self, groups: list[dict[str, Any]], *, estimator: str = "grpo", min_group_size: int = 2,
                   zero_std: str = "zero") -> Any:
        """Advantages and masks for groups of rewards (grpo, rloo, reinforce_pp, grpo_per_step)."""
        return self._call("POST", "/v1/advantages", json={"groups": groups, "estimator": estimator,
                                                          "min_group_size": min_group_size, "zero_std": zero_std})

    def rescore(self, job_id: str, spec: dict[str, Any], *, ground_truth_source: str = "auto") -> Any:
        """Start re-scoring a rollout job's stored trajectories; returns the job reference (spec_hash)."""
        return self._call("POST", f"/v1/rollouts/{job_id}/rescore",
                          json={"spec": spec, "ground_truth_source": ground_truth_source})

    def rescore_status(self, job_id: str, spec_hash: str) -> Any:
        """Progress of a re-scoring run: total, scored, failed, skipped, pending, done."""
        return self._call("GET", f"/v1/rollouts/{job_id}/rescore/{spec_hash}")

    def clean(self, rows: list[Any], *, pipeline: list[dict[str, Any]] | None = None,
              dedup: bool | dict[str, Any] = False) -> Any:
        """Clean rows now: kept, dropped, invalid and per-step stats."""
        return self._call("POST", "/v1/clean", json={"rows": rows, "pipeline": pipeline, "dedup": dedup})

    def list_filters(self) -> Any:
        """The cleaning steps with parameter schemas, and the drop reasons."""
        return self._call("GET", "/v1/filters")

    def create_clean_job(self, dataset_id: str, *, pipeline: list[dict[str, Any]] | None = None,
                         dedup: bool | dict[str, Any] = True, batch_size: int = 1000) -> Any:
        """Start a cleaning job over an uploaded dataset."""
        body = {"dataset_id": dataset_id, "pipeline": pipeline, "dedup": dedup, "batch_size": batch_size}
        return self._call("POST", "/v1/clean/jobs", json=body)

    def clean_job(self, job_id: str) -> Any:
        """A cleaning job's status and progress."""
        return self._call("GET", f"/v1/clean/jobs/{job_id}")

    def clean_job_kept(self, job_id: str) -> Any:
        """The job's kept rows as JSONL bytes."""
        return self._call("GET", f"/v1/clean/jobs/{job_id}/kept")

    def clean_job_dropped(self, job_id: str, *, reason: str | None = None) -> Any:
        """The job's dropped and invalid rows as JSONL bytes (optionally one reason)."""
        params = {"reason": reason} if reason else {}
        return self._call("GET", f"/v1/clean/jobs/{job_id}/dropped", params=params)

    def clean_job_drop_summary(self, job_id: str) -> Any:
        """The job's dropped rows counted by step and reason."""
        return self._call("GET", f"/v1/clean/jobs/{job_id}/dropped/summary")

    def session_trajectory(self, session_id: str) -> Any:
        """A gateway session's calls merged into token-exact segments, with prefix mismatches."""
        return self._call("GET", f"/v1/sessions/{session_id}/trajectory")

    def session_traces(self, session_id: str) -> Any:
        """Every trace record of a gateway session, in order."""
        return self._call("GET", f"/v1/sessions/{session_id}/traces")

    def create_rollout(self, spec: dict[str, Any]) -> Any:
        """Submit a rollout job (tasks, group_size, policy, sampling, limits, tools/env, reward)."""
        return self._call("POST", "/v1/rollouts", json=spec)

    def rollout(self, job_id: str) -> Any:
        """A rollout job's status, progress and counts per stop reason."""
        return self._call("GET", f"/v1/rollouts/{job_id}")

    def rollout_trajectories(self, job_id: str, *, offset: int = 0, limit: int = 100) -> Any:
        """A page of a rollout job's trajectories: ``{items, next_offset}``."""
        return self._call("GET", f"/v1/rollouts/{job_id}/trajectories",
                          params={"offset": offset, "limit": limit, "format": "json"})

    def cancel_rollout(self, job_id: str) -> Any:
        """Ask a rollout job to stop; in-flight work is cancelled."""
        return self._call("POST", f"/v1/rollouts/{job_id}/cancel")

    def export_rollout(self, job_id: str, *, format: str = "parquet") -> Any:
        """A rollout job's export as bytes: token-level ``parquet`` or ``jsonl`` of messages."""
        return self._call("GET", f"/v1/rollouts/{job_id}/export", params={"format": format})

    def update_weights_from_disk(self, model_path: str, *, prefix: str = "/inference") -> Any:
        """Load new weights (an HF model directory the server can read) into the local engine.

        ``prefix`` is where the engine is mounted: ``/inference`` in the all-in-one app, ``""`` when the
        engine is served on its own. Answers ``{success, message, weight_version}``.
        """
        return self._call("POST", f"{prefix}/update_weights_from_disk", json={"model_path": model_path})


def _headers(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


class Client(_Endpoints):
    """Synchronous client."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return _result(self._http.request(method, path, **kwargs))

    def iter_rollout_events(self, job_id: str) -> Iterator[ServerEvent]:
        """Follow a rollout job's progress (``progress``, ``group``, then ``end``) as it runs."""
        with self._http.stream("GET", f"/v1/rollouts/{job_id}/events", timeout=httpx.Timeout(None, connect=10.0),
                               headers={"accept": "text/event-stream"}) as response:
            if response.status_code >= 400:
                response.read()
                raise error_from_response(response)
            for event in parse_sse(response.iter_lines()):
                yield event
                if event.event == "end":
                    return

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Endpoints):
    """Asynchronous client (every endpoint method returns an awaitable)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 60.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, headers=_headers(api_key), timeout=timeout,
                                       transport=transport)

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return _result(await self._http.request(method, path, **kwargs))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

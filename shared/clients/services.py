"""Typed async clients of every service, all over one transport seam (``shared.clients.transport``).

Errors come back as the server's ``TrajforgeError`` subclass (``shared.client.error_from_response``);
a service that cannot be reached is ``UpstreamUnavailable``, one that does not answer in time
``UpstreamTimeout``. Calls that are safe to repeat (reads, tool and score calls keyed by the
caller) are retried on those and on 502/503/504, with exponential backoff, ``attempts`` times.
"""

from __future__ import annotations

import asyncio
import json as _stdlib_json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Self
from urllib.parse import quote

import httpx
import orjson
from pydantic import BaseModel

from shared.client import error_from_response
from shared.clients.openenv import OpenEnvSession
from shared.clients.scoring import parse_prompt_logprobs, prompt_logprobs_body
from shared.clients.transport import AsgiExchange, Endpoint, Endpoints, Reply
from shared.errors import TrajforgeError, UpstreamTimeout, UpstreamUnavailable
from shared.jsonl import dumps_wide
from shared.schema import ScoredTrajectory, ToolInfo, Trajectory
from shared.schema.reward_spec import JobRewardSummary, StoredReward
from shared.settings import Settings

__all__ = [
    "CleaningClient",
    "EnvsClient",
    "GatewayClient",
    "InferenceClient",
    "RewardClient",
    "RolloutClient",
    "ServiceClient",
    "ToolOutcome",
    "ToolsClient",
]

_RETRY_STATUS = frozenset({502, 503, 504})
#: Trajectories per ``POST /v1/rewards/query`` (the route's limit).
_STORED_BATCH = 1000


class ToolOutcome(BaseModel):
    """One tool call's result as the tools service returns it: content plus a structured status."""

    tool_call_id: str = ""
    name: str = ""
    status: Literal["ok", "error"]
    error_kind: str | None = None
    content: str = ""
    latency_s: float = 0.0


class ServiceClient:
    """Base of the service clients: ``httpx.AsyncClient`` over a URL, ``AsgiExchange`` into an app of this process.

    Everything above the exchange (JSON in and out, retries, error mapping) is one code path.
    """

    service: ClassVar[str] = ""

    def __init__(self, endpoint: Endpoint, *, api_key: str | None = None, timeout_s: float = 60.0,
                 connect_timeout_s: float = 5.0, attempts: int = 3) -> None:
        self.endpoint, self.api_key, self.attempts = endpoint, api_key, max(1, attempts)
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self.http: httpx.AsyncClient | None = None
        self.asgi: AsgiExchange | None = None
        if endpoint.in_process:
            self.asgi = endpoint.exchange(headers)
        else:
            self.http = httpx.AsyncClient(transport=endpoint.transport(), base_url=endpoint.base_url,
                                          headers=headers, timeout=self.timeout)

    @classmethod
    async def open(cls, endpoints: Endpoints, *, api_key: str | None = None,
                   settings: Settings | None = None) -> Self:
        """A client of this service at the endpoint ``endpoints`` resolves, with the settings' budgets."""
        s = settings or endpoints.settings
        return cls(await endpoints.get(cls.service), api_key=api_key, timeout_s=s.client_timeout_s,
                   connect_timeout_s=s.client_connect_timeout_s, attempts=s.client_attempts)

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self.http is not None:
            await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                      retry: bool = True, timeout_s: float | None = None, content: bytes | None = None,
                      headers: dict[str, str] | None = None) -> Any:
        """One call: the parsed JSON body (bytes for other bodies), or the server's error raised.

        ``content`` sends raw bytes instead of ``json`` (with ``headers`` such as its content type).
        """
        if json is not None and content is None:
            content = _encode_json(json)
            headers = {"content-type": "application/json", **(headers or {})}
        last: TrajforgeError | None = None
        tries = self.attempts if retry else 1
        for attempt in range(tries):
            if attempt:
                await asyncio.sleep(min(0.2 * 2 ** (attempt - 1), 3.0))
            try:
                resp = await self._exchange(method, path, params, content, headers, timeout_s)
            except httpx.TimeoutException as exc:
                last = UpstreamTimeout(f"{self.service} service: {method} {path} timed out ({exc!r})")
                continue
            except httpx.TransportError as exc:
                last = UpstreamUnavailable(f"{self.service} service unreachable at {self.endpoint.base_url}: {exc}")
                continue
            if resp.status_code in _RETRY_STATUS and attempt + 1 < tries:
                last = self._error(resp, method, path)
                continue
            if resp.status_code >= 400:
                raise self._error(resp, method, path)
            if resp.status_code == 204 or not resp.content:
                return None
            if resp.headers.get("content-type", "").startswith("application/json"):
                return _decode_json(resp.content)
            return resp.content
        assert last is not None
        raise last

    async def _exchange(self, method: str, path: str, params: dict[str, Any] | None, content: bytes | None,
                        headers: dict[str, str] | None, timeout_s: float | None) -> httpx.Response | Reply:
        """The one seam: the same request over the network or into the app of this process."""
        if self.asgi is not None:
            query = str(httpx.QueryParams(params)) if params else ""
            return await self.asgi.send(method, path, query=query, content=content or b"", headers=headers)
        assert self.http is not None
        timeout = httpx.Timeout(timeout_s, connect=self.timeout.connect) if timeout_s else self.timeout
        return await self.http.request(method, path, params=params, timeout=timeout, content=content,
                                       headers=headers)

    def _error(self, resp: httpx.Response | Reply, method: str, path: str) -> TrajforgeError:
        if isinstance(resp, Reply):
            resp = resp.to_httpx(method, self.endpoint.base_url + path)
        return error_from_response(resp)


def _encode_json(value: Any) -> bytes:
    """A request body, compact UTF-8 as httpx writes ``json=``, but with orjson (a sixth of the CPU).

    orjson writes NaN and infinities as ``null`` (the server then refuses the field if it needs a number);
    what orjson refuses (integers past 64 bits) goes through the one JSONL fallback.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return dumps_wide(value)


def _decode_json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _stdlib_json.loads(raw)  # NaN and Infinity literals, which orjson refuses


class GatewayClient(ServiceClient):
    """The OpenAI-compatible gateway: completions (each one a trace), models, session traces."""

    service = "gateway"

    def session_root(self, session_id: str) -> str:
        """The path under which calls are recorded as ``session_id``."""
        return f"/sessions/{quote(session_id, safe='')}"

    async def chat_completions(self, body: dict[str, Any], *, session_id: str | None = None,
                               timeout_s: float | None = None) -> dict[str, Any]:
        """``POST /v1/chat/completions`` (under the session's path when given); not retried here."""
        root = self.session_root(session_id) if session_id else ""
        out: dict[str, Any] = await self.request("POST", f"{root}/v1/chat/completions", json=body, retry=False,
                                                 timeout_s=timeout_s)
        return out

    async def completions(self, body: dict[str, Any], *, session_id: str | None = None,
                          timeout_s: float | None = None) -> dict[str, Any]:
        """``POST /v1/completions`` (token prompts allowed); not retried here."""
        root = self.session_root(session_id) if session_id else ""
        out: dict[str, Any] = await self.request("POST", f"{root}/v1/completions", json=body, retry=False,
                                                 timeout_s=timeout_s)
        return out

    async def models(self) -> list[str]:
        """Ids of the models the gateway serves."""
        body = await self.request("GET", "/v1/models")
        return [str(m["id"]) for m in (body or {}).get("data") or []]

    async def score_tokens(self, model: str, token_ids: list[int], *,
                           timeout_s: float | None = None) -> list[float | None]:
        """Logprob of each token under ``model`` given the ones before it (``None`` first): prompt logprobs."""
        answer = await self.request("POST", "/v1/completions", json=prompt_logprobs_body(model, token_ids),
                                    timeout_s=timeout_s)
        return parse_prompt_logprobs(answer, token_ids)

    async def tokenize_chat(self, model: str, messages: list[dict[str, Any]], *,
                            tools: list[dict[str, Any]] | None = None) -> list[int]:
        """Prompt ids of ``messages`` as ``model``'s chat template renders them (generation prompt added)."""
        body: dict[str, Any] = {"model": model, "messages": messages, "add_generation_prompt": True}
        if tools:
            body["tools"] = tools
        out = await self.request("POST", "/tokenize", json=body)
        return [int(t) for t in (out or {}).get("tokens") or []]

    async def traces(self, session_id: str) -> list[dict[str, Any]]:
        """Every trace row the gateway stored for the session, in order."""
        out: list[dict[str, Any]] = await self.request("GET", f"/v1/sessions/{quote(session_id, safe='')}/traces")
        return out


class InferenceClient(ServiceClient):
    """The local engine's vLLM-style API."""

    service = "inference"

    async def tokenize(self, text: str, *, model: str | None = None) -> list[int]:
        """Token ids of ``text``."""
        body = await self.request("POST", "/tokenize", json={"prompt": text, **({"model": model} if model else {})})
        return [int(t) for t in body.get("tokens") or []]

    async def models(self) -> list[str]:
        """Ids of the served models."""
        body = await self.request("GET", "/v1/models")
        return [str(m["id"]) for m in (body or {}).get("data") or []]

    async def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/chat/completions``."""
        out: dict[str, Any] = await self.request("POST", "/v1/chat/completions", json=body, retry=False)
        return out


class CleaningClient(ServiceClient):
    """The cleaning service: filter catalogue and synchronous cleaning."""

    service = "cleaning"

    async def filters(self) -> dict[str, Any]:
        """The filter catalogue."""
        out: dict[str, Any] = await self.request("GET", "/v1/filters")
        return out

    async def clean(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/clean``: kept rows and dropped rows with reasons."""
        out: dict[str, Any] = await self.request("POST", "/v1/clean", json=body)
        return out


class ToolsClient(ServiceClient):
    """The tools service: built-in and registered tools, run there (sandboxes live there)."""

    service = "tools"

    async def list_tools(self) -> list[ToolInfo]:
        """Every callable tool."""
        body = await self.request("GET", "/v1/tools")
        return [ToolInfo.model_validate(t) for t in body.get("tools") or []]

    async def call(self, tool_call: dict[str, Any], *, session_id: str | None = None,
                   timeout_s: float | None = None) -> ToolOutcome:
        """Run one OpenAI tool call."""
        body = await self.request("POST", "/v1/tools/call", json={"tool_call": tool_call, "session_id": session_id},
                                  retry=False, timeout_s=timeout_s)
        return ToolOutcome.model_validate(body)

    async def call_batch(self, tool_calls: list[dict[str, Any]], *, session_id: str | None = None,
                         timeout_s: float | None = None) -> list[ToolOutcome]:
        """Run several calls at once in the service; one outcome per call, in order."""
        body = await self.request("POST", "/v1/tools/call_batch",
                                  json={"tool_calls": tool_calls, "session_id": session_id},
                                  retry=False, timeout_s=timeout_s)
        return [ToolOutcome.model_validate(r) for r in body.get("results") or []]

    async def register(self, spec: dict[str, Any]) -> ToolInfo:
        """Register an HTTP tool (``POST /v1/tools/register``)."""
        return ToolInfo.model_validate(await self.request("POST", "/v1/tools/register", json=spec, retry=False))


class EnvsClient(ServiceClient):
    """The envs service: OpenEnv sessions over WebSocket, plus its HTTP info routes."""

    service = "envs"

    def env_root(self, name: str) -> str:
        """The OpenEnv base URL of env ``name`` on this service."""
        return f"{self.endpoint.base_url}/envs/{quote(name, safe='')}"

    async def schema(self, name: str) -> dict[str, Any]:
        """``GET /envs/{name}/schema``: action/observation/state schemas and the env's tools."""
        out: dict[str, Any] = await self.request("GET", f"/envs/{quote(name, safe='')}/schema")
        return out

    async def health(self, name: str) -> dict[str, Any]:
        """``GET /envs/{name}/health``: liveness and slots."""
        out: dict[str, Any] = await self.request("GET", f"/envs/{quote(name, safe='')}/health")
        return out

    def session(self, name: str, *, message_timeout_s: float = 60.0, connect_timeout_s: float = 10.0
                ) -> OpenEnvSession:
        """A WebSocket session on env ``name`` (in-process when the endpoint is an app here)."""
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return OpenEnvSession(self.env_root(name), app=self.endpoint.app, headers=headers,
                              message_timeout_s=message_timeout_s, connect_timeout_s=connect_timeout_s)


class RewardClient(ServiceClient):
    """The reward service: scoring, advantages, re-scoring of stored jobs."""

    service = "reward"

    async def score(self, trajectories: list[Trajectory], spec: dict[str, Any],
                    ground_truths: list[dict[str, Any] | None] | None = None,
                    processors: list[dict[str, Any]] | None = None) -> list[ScoredTrajectory]:
        """Score trajectories with a reward spec and reward processors by weight (pure: nothing is stored)."""
        body: dict[str, Any] = {"trajectories": [t.model_dump(mode="json") for t in trajectories], "spec": spec,
                                "ground_truths": ground_truths}
        if processors:
            body["processors"] = processors
        out = await self.request("POST", "/v1/rewards/score", json=body)
        return [ScoredTrajectory.model_validate(r) for r in out.get("results") or []]

    async def check_spec(self, spec: dict[str, Any]) -> str:
        """The spec's hash when the service has every component it names with the params given (4xx if not)."""
        out = await self.request("POST", "/v1/rewards/check", json={"spec": spec})
        return str(out["spec_hash"])

    async def record(self, spec: dict[str, Any], results: list[ScoredTrajectory], *,
                     job_id: str | None = None) -> dict[str, Any]:
        """Keep scores for stored trajectories (``trajectory_id`` names each, ``job_id`` their job); safe to repeat."""
        body = {"spec": spec, "results": [r.model_dump(mode="json") for r in results], "job_id": job_id}
        out: dict[str, Any] = await self.request("POST", "/v1/rewards/record", json=body)
        return out

    async def stored(self, trajectory_ids: Sequence[str], *,
                     components: Sequence[str] | None = None) -> list[StoredReward]:
        """The scores kept for stored trajectories (every spec's, oldest first), a bounded batch per call."""
        out: list[StoredReward] = []
        ids = list(dict.fromkeys(trajectory_ids))
        for start in range(0, len(ids), _STORED_BATCH):
            body: dict[str, Any] = {"trajectory_ids": ids[start:start + _STORED_BATCH]}
            if components is not None:
                body["components"] = list(components)
            page = await self.request("POST", "/v1/rewards/query", json=body)
            out += [StoredReward.model_validate(r) for r in page.get("items") or []]
        out.sort(key=lambda r: r.created_at)  # stable: each batch is already oldest first
        return out

    async def job_summary(self, job_id: str) -> JobRewardSummary:
        """Mean score of each component over the scores kept for a rollout job's trajectories."""
        out = await self.request("GET", "/v1/rewards/summary", params={"job_id": job_id})
        return JobRewardSummary.model_validate(out)

    async def advantages(self, groups: list[dict[str, Any]], **options: Any) -> list[dict[str, Any]]:
        """Advantages and masks per group (``POST /v1/advantages``)."""
        out = await self.request("POST", "/v1/advantages", json={"groups": groups, **options})
        return list(out.get("groups") or [])

    async def rescore(self, job_id: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Start re-scoring a stored rollout job."""
        out: dict[str, Any] = await self.request("POST", f"/v1/rollouts/{job_id}/rescore", json={"spec": spec},
                                                 retry=False)
        return out

    async def rescore_progress(self, job_id: str, spec_hash: str) -> dict[str, Any]:
        """Progress of a re-scoring run."""
        out: dict[str, Any] = await self.request("GET", f"/v1/rollouts/{job_id}/rescore/{spec_hash}")
        return out


class RolloutClient(ServiceClient):
    """The rollout service: jobs and their trajectories."""

    service = "rollout"

    async def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/rollouts``."""
        out: dict[str, Any] = await self.request("POST", "/v1/rollouts", json=body, retry=False)
        return out

    async def get(self, job_id: str) -> dict[str, Any]:
        """A job's status and counts."""
        out: dict[str, Any] = await self.request("GET", f"/v1/rollouts/{job_id}")
        return out

    async def cancel(self, job_id: str) -> dict[str, Any]:
        """Ask a job to stop."""
        out: dict[str, Any] = await self.request("POST", f"/v1/rollouts/{job_id}/cancel")
        return out

    async def trajectories(self, job_id: str, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """A page of a job's trajectories."""
        out: dict[str, Any] = await self.request("GET", f"/v1/rollouts/{job_id}/trajectories",
                                                 params={"offset": offset, "limit": limit})
        return out

    async def keep_rewards(self, job_id: str, totals: dict[str, float | None]) -> int:
        """Hand the job's trajectories their newest reward totals (trajectory id → score) to keep; returns how many
        it holds. The reward service sends them after it re-scores; the same totals twice change nothing."""
        body = {"totals": [{"trajectory_id": tid, "score": score} for tid, score in totals.items()]}
        out = await self.request("POST", f"/v1/rollouts/{job_id}/rewards", json=body)
        return int(out.get("kept") or 0)

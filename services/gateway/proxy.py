"""The OpenAI-compatible proxy: validate, route, forward, capture, answer.

One ``TraceRecord`` is written for every call that reached an upstream,
including calls that failed there or died mid-stream.
"""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.responses import Response, StreamingResponse

from services.gateway.assemble import StreamAssembler
from services.gateway.capture import extract_tokens, first_choice, strip_extensions
from services.gateway.config import UpstreamSpec
from services.gateway.errors import ClientClosed
from services.gateway.http1 import Http1Error
from services.gateway.ratelimit import KeyedRateLimiter
from services.gateway.toolstatus import tool_call_statuses
from services.gateway.traces import TraceSink
from services.gateway.upstream_errors import upstream_error
from services.gateway.upstreams import Replica, UpstreamPool, UpstreamReply
from services.gateway.validation import (
    RequestHead,
    parse_body,
    validate_chat,
    validate_completion,
    validate_tokenize,
)
from shared.errors import TrajforgeError, UpstreamError, UpstreamUnavailable
from shared.settings import DEFAULT_MAX_REQUEST_BYTES
from shared.traces import TraceRecord
from shared.web.openai_errors import sse_error_event

__all__ = ["CHAT_PATH", "COMPLETIONS_PATH", "TOKENIZE_PATH", "CallContext", "GatewayProxy"]

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"
TOKENIZE_PATH = "/tokenize"
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


@dataclass(slots=True)
class CallContext:
    """Who is calling and which rollout the call belongs to (made per call, so not a validating model)."""

    session_id: str | None = None
    attempt: int | None = None
    rate_key: str = "anonymous"
    api_key_id: str | None = None


@dataclass(slots=True)
class _Wants:
    """Which extension fields the client itself asked for (the rest are stripped)."""

    token_ids: bool = False
    logprobs: bool = False
    usage_chunk: bool = False


class GatewayProxy:
    """Forwards OpenAI calls to the pool and captures one trace per upstream call."""

    def __init__(
        self, pool: UpstreamPool, sink: TraceSink, *, limiter: KeyedRateLimiter | None = None,
        max_body_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    ) -> None:
        self.pool = pool
        self.max_body_bytes = max_body_bytes
        self.sink = sink
        self.limiter = limiter or KeyedRateLimiter(pool.config.rate_limit)
        self._sequences: OrderedDict[str, itertools.count[int]] = OrderedDict()

    def models(self) -> dict[str, Any]:
        """The ``/v1/models`` listing of every routed model name."""
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "trajforge"} for m in self.pool.models()]
        return {"object": "list", "data": data}

    async def forward(self, path: str, raw: bytes, ctx: CallContext, *, parsed: Any = None) -> Response:
        """Handle one chat or completions call end to end.

        ``parsed`` is ``raw`` already decoded (by the request middleware), which saves decoding it again.
        """
        started = time.perf_counter()
        body = parse_body(raw, max_bytes=self.max_body_bytes, parsed=parsed)
        head = validate_chat(body) if path == CHAT_PATH else validate_completion(body)
        self.pool.replicas(head.model)
        self.limiter.check(ctx.rate_key)
        replica = self.pool.pick(head.model, ctx.session_id)
        self.pool.begin(replica)
        trace = self._new_trace(path, body, head, replica, ctx)
        wants = _wants(body, head)
        upstream_body = orjson.dumps(_upstream_body(body, head, replica.spec, path))
        if head.stream:
            return await self._stream(path, upstream_body, replica, trace, wants, started)
        try:
            return await self._once(path, upstream_body, replica, trace, wants, started)
        finally:
            self.pool.end(replica)

    async def tokenize(self, raw: bytes, ctx: CallContext) -> Response:
        """Forward a ``/tokenize`` call to a replica of its model (no trace: nothing is generated)."""
        body = parse_body(raw, max_bytes=self.max_body_bytes)
        head = validate_tokenize(body)
        self.pool.replicas(head.model)
        self.limiter.check(ctx.rate_key)
        replica = self.pool.pick(head.model, ctx.session_id)
        spec = replica.spec
        out = {**body, "model": spec.served_model} if spec.served_model else body
        self.pool.begin(replica)
        try:
            reply = await self._send(TOKENIZE_PATH, orjson.dumps(out), replica, stream=False)
        finally:
            self.pool.end(replica)
        if reply.status != 200:
            raise upstream_error(reply.status, reply.body, reply.headers, reply.replica.id)
        return Response(reply.body, media_type="application/json")

    def _new_trace(
        self, path: str, body: dict[str, Any], head: RequestHead, replica: Replica, ctx: CallContext
    ) -> TraceRecord:
        return TraceRecord(
            session_id=ctx.session_id,
            attempt=ctx.attempt,
            sequence=self._next_sequence(ctx.session_id),
            endpoint=path,
            model=head.model,
            replica=replica.id,
            stream=head.stream,
            request=body,
            weight_version=replica.spec.weight_version,
            api_key_id=ctx.api_key_id,
        )

    def _next_sequence(self, session_id: str | None) -> int:
        if session_id is None:
            return 0
        counter = self._sequences.setdefault(session_id, itertools.count())
        self._sequences.move_to_end(session_id)
        # Forget the least recently active sessions, as the sticky map does.
        if len(self._sequences) > self.pool.config.max_sticky_sessions:
            self._sequences.popitem(last=False)
        return next(counter)

    async def _send(
        self, path: str, body: bytes, replica: Replica, *, stream: bool
    ) -> UpstreamReply:
        try:
            return await self.pool.send(replica, path, body, stream=stream)
        except UpstreamUnavailable:
            # A dead replica: try once on another one of the same model, if any.
            group = self.pool.replicas(replica.spec.model)
            if len(group) < 2:
                raise
            other = self.pool.pick(replica.spec.model, None, avoid=replica.id)
            return await self.pool.send(other, path, body, stream=stream)

    async def _once(
        self, path: str, body: bytes, replica: Replica, trace: TraceRecord, wants: _Wants, started: float
    ) -> Response:
        try:
            reply = await self._send(path, body, replica, stream=False)
        except TrajforgeError as exc:
            await self._fail(trace, exc, started)
            raise
        trace.retries, trace.replica = reply.retries, reply.replica.id
        if reply.status != 200:
            err = upstream_error(reply.status, reply.body, reply.headers, reply.replica.id)
            await self._fail(trace, err, started, http_status=reply.status)
            raise err
        response = orjson.loads(reply.body)
        _public_model(response, trace.model)
        await self._succeed(trace, response, started)
        strip_extensions(response, keep_token_ids=wants.token_ids, keep_logprobs=wants.logprobs)
        overhead = _overhead_header(started, reply)
        return Response(orjson.dumps(response), media_type="application/json", headers=overhead)

    async def _stream(
        self, path: str, body: bytes, replica: Replica, trace: TraceRecord, wants: _Wants, started: float
    ) -> Response:
        try:
            reply = await self._send(path, body, replica, stream=True)
        except TrajforgeError as exc:
            self.pool.end(replica)
            await self._fail(trace, exc, started)
            raise
        trace.retries, trace.replica = reply.retries, reply.replica.id
        if reply.stream is None:
            self.pool.end(replica)
            err = upstream_error(reply.status, reply.body, reply.headers, reply.replica.id)
            await self._fail(trace, err, started, http_status=reply.status)
            raise err
        events = self._relay(reply, replica, trace, wants, started)
        return StreamingResponse(events, media_type="text/event-stream", headers=_SSE_HEADERS)

    async def _relay(
        self, reply: UpstreamReply, replica: Replica, trace: TraceRecord, wants: _Wants, started: float
    ) -> AsyncIterator[bytes]:
        assembler = StreamAssembler(chat=trace.endpoint == CHAT_PATH)
        finished = False
        try:
            try:
                async for event in _relay_events(reply, assembler, trace.model, wants):
                    yield event
            except _MidStreamError as exc:
                await self._finish_stream(replica, trace, assembler, exc.error, started)
                finished = True
                yield sse_error_event(exc.error)
                return
            # The trace is stored before the client sees the end, so it can be read right after.
            await self._finish_stream(replica, trace, assembler, None, started)
            finished = True
            yield b"data: [DONE]\n\n"
        finally:
            await reply.stream.aclose()  # type: ignore[union-attr]
            if not finished:
                closed = ClientClosed("The client closed the stream before it ended.")
                await self._finish_stream(replica, trace, assembler, closed, started)

    async def _finish_stream(
        self,
        replica: Replica,
        trace: TraceRecord,
        assembler: StreamAssembler,
        error: TrajforgeError | None,
        started: float,
    ) -> None:
        self.pool.end(replica)
        response = assembler.build()
        if error is None:
            await self._succeed(trace, response, started)
            return
        _fill_tokens(trace, response)
        await self._fail(trace, error, started)

    async def _succeed(self, trace: TraceRecord, response: dict[str, Any], started: float) -> None:
        _fill_tokens(trace, response)
        trace.latency_ms = (time.perf_counter() - started) * 1000
        await self.sink.write(trace)

    async def _fail(
        self, trace: TraceRecord, exc: TrajforgeError, started: float, *, http_status: int | None = None
    ) -> None:
        trace.status = "error"
        trace.http_status = http_status or exc.status_code
        trace.error_code, trace.error_message = exc.code, exc.message
        trace.latency_ms = (time.perf_counter() - started) * 1000
        await self.sink.write(trace)


class _MidStreamError(Exception):
    """The upstream stream broke after the client already got a 200."""

    def __init__(self, error: TrajforgeError) -> None:
        super().__init__(error.message)
        self.error = error


async def _relay_events(
    reply: UpstreamReply, assembler: StreamAssembler, model: str, wants: _Wants
) -> AsyncIterator[bytes]:
    """Decode each upstream SSE event once: fold it into the trace, re-emit the client's view."""
    assert reply.stream is not None
    done = False
    try:
        async for line in reply.stream.aiter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            chunk = orjson.loads(payload)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise _MidStreamError(UpstreamError(f"Upstream error mid-stream: {chunk['error']}"))
            out = _client_chunk(chunk, assembler, model, wants)
            if out is not None:
                yield out
    except (Http1Error, orjson.JSONDecodeError) as exc:
        raise _MidStreamError(UpstreamError(f"Upstream {reply.replica.id} broke mid-stream: {exc!r}.")) from exc
    if not done:
        raise _MidStreamError(UpstreamError(f"Upstream {reply.replica.id} closed the stream early."))


def _client_chunk(
    chunk: dict[str, Any], assembler: StreamAssembler, model: str, wants: _Wants
) -> bytes | None:
    assembler.feed(chunk)
    if not chunk.get("choices") and chunk.get("usage") and not wants.usage_chunk:
        return None
    if wants.usage_chunk is False and chunk.get("usage"):
        chunk["usage"] = None
    _public_model(chunk, model)
    strip_extensions(chunk, keep_token_ids=wants.token_ids, keep_logprobs=wants.logprobs)
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _wants(body: dict[str, Any], head: RequestHead) -> _Wants:
    asked_lp = body.get("logprobs")
    options = body.get("stream_options") or {}
    return _Wants(
        token_ids=bool(head.return_token_ids),
        logprobs=asked_lp is not None and asked_lp is not False,
        usage_chunk=bool(options.get("include_usage")) if isinstance(options, dict) else False,
    )


def _upstream_body(body: dict[str, Any], head: RequestHead, spec: UpstreamSpec, path: str) -> dict[str, Any]:
    out = dict(body)
    if spec.served_model:
        out["model"] = spec.served_model
    if spec.return_token_ids:
        out["return_token_ids"] = True
    if spec.logprobs and not _wants(body, head).logprobs:
        # Chat takes a boolean; completions take the number of alternatives (0 = sampled only).
        out["logprobs"] = True if path == CHAT_PATH else 0
    if head.stream:
        out["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    return out


def _public_model(response: dict[str, Any], model: str) -> None:
    if "model" in response:
        response["model"] = model


def _fill_tokens(trace: TraceRecord, response: dict[str, Any]) -> None:
    tokens = extract_tokens(response)
    # Token arrays live in their own columns; the stored body is the OpenAI shape.
    trace.response = _without_token_arrays(response)
    trace.prompt_token_ids = tokens.prompt_token_ids
    trace.completion_token_ids = tokens.completion_token_ids
    trace.logprobs = tokens.logprobs
    trace.finish_reason = tokens.finish_reason
    trace.usage = tokens.usage
    trace.parse_statuses = tool_call_statuses(_reply_message(response), trace.request.get("tools"))
    trace.weight_version = response.get("weight_version") or trace.weight_version


def _reply_message(response: dict[str, Any]) -> dict[str, Any]:
    choice = first_choice(response)
    message = choice.get("message")
    # Completions have no message: their text is where an attempted call would be.
    return message if isinstance(message, dict) else {"content": choice.get("text")}


def _without_token_arrays(response: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in response.items() if k != "prompt_token_ids"}
    choices = response.get("choices") or []
    out["choices"] = [
        {k: v for k, v in c.items() if k not in ("token_ids", "prompt_token_ids", "logprobs", "prompt_logprobs")}
        for c in choices
        if isinstance(c, dict)
    ]
    return out


def _overhead_header(started: float, reply: UpstreamReply) -> dict[str, str]:
    total_ms = (time.perf_counter() - started) * 1000
    upstream_ms = float(reply.extra.get("upstream_ms", 0.0))
    return {"x-trajforge-overhead-ms": f"{max(0.0, total_ms - upstream_ms):.3f}"}

"""A minimal OpenAI-shaped upstream for tests and benchmarks (not a model).

It renders messages with a tiny byte-level chat template, answers with a
scripted reply, and returns ``prompt_token_ids``, ``token_ids`` and logprobs
the way vLLM does, streaming or not. Behaviour is scripted per request through
``POST /_script`` (failures with a status and Retry-After, a slow answer, a
stream that dies after N chunks, a reply with reasoning or tool calls, or
explicit sampled ids). Like Qwen3, the template drops ``<think>`` blocks of
assistant turns in the history.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import orjson
import uvicorn
from fastapi import FastAPI, Request
from pydantic import BaseModel, Field
from starlette.responses import Response, StreamingResponse

__all__ = ["Behaviour", "ServerThread", "decode", "encode", "make_upstream_app", "render"]

END = "<|end|>"
# Ids above the byte range stand for multi-byte pieces; the template never emits them,
# so sampling one and re-rendering it later is a re-tokenisation.
MERGED: dict[int, str] = {300: "hi", 301: " there"}
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


class Behaviour(BaseModel):
    """What the upstream does for one request."""

    status: int = 200
    retry_after: str | None = None
    delay_s: float = 0.0
    die_after_chunks: int | None = None
    content: str = "ok"
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    token_ids: list[int] | None = None
    finish_reason: str | None = None


def encode(text: str) -> list[int]:
    """Byte-level token ids of ``text``."""
    return list(text.encode("utf-8"))


def decode(ids: list[int]) -> str:
    """Text of token ids (bytes, plus the merged pieces)."""
    out = bytearray()
    for i in ids:
        out += MERGED[i].encode() if i in MERGED else bytes([i])
    return out.decode("utf-8", "replace")


def _calls_text(calls: list[dict[str, Any]]) -> str:
    parts = []
    for call in calls:
        fn = call.get("function", call)
        parts.append("<tool_call>" + json.dumps({"name": fn["name"], "arguments": fn["arguments"]}) + "</tool_call>")
    return "".join(parts)


def _body(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        content = " ".join(p.get("text") or "" for p in content)
    if message.get("role") == "assistant":
        return _THINK.sub("", content) + _calls_text(message.get("tool_calls") or [])
    return content


def render(messages: list[dict[str, Any]]) -> str:
    """The prompt text: each message as ``<|role|>body<|end|>``, then ``<|assistant|>``."""
    return "".join(f"<|{m['role']}|>{_body(m)}{END}" for m in messages) + "<|assistant|>"


class _Reply(BaseModel):
    """One scripted answer, as text pieces with the ids that produced them."""

    content: str
    reasoning: str | None
    tool_calls: list[dict[str, Any]]
    pieces: list[tuple[dict[str, Any], list[int]]]
    finish_reason: str

    @property
    def ids(self) -> list[int]:
        """Every sampled id, in order."""
        return [i for _, ids in self.pieces for i in ids]


def _tool_calls(b: Behaviour, n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{n}_{i}", "type": "function",
         "function": {"name": c["name"],
                      "arguments": c["arguments"] if isinstance(c["arguments"], str) else json.dumps(c["arguments"])}}
        for i, c in enumerate(b.tool_calls)
    ]


def _pieces(b: Behaviour, calls: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[int]]]:
    pieces: list[tuple[dict[str, Any], list[int]]] = [({"role": "assistant", "content": ""}, [])]
    if b.reasoning:
        pieces.append(({"reasoning": b.reasoning}, encode(f"<think>{b.reasoning}</think>")))
    for k in range(0, len(b.content), 4):
        piece = b.content[k : k + 4]
        pieces.append(({"content": piece}, encode(piece)))
    for i, call in enumerate(calls):
        fn = call["function"]
        head = {"index": i, "id": call["id"], "type": "function", "function": {"name": fn["name"], "arguments": ""}}
        pieces.append(({"tool_calls": [head]}, encode(_calls_text([call]))))
        half = len(fn["arguments"]) // 2
        for part in (fn["arguments"][:half], fn["arguments"][half:]):
            pieces.append(({"tool_calls": [{"index": i, "function": {"arguments": part}}]}, []))
    pieces.append(({}, encode(END)))
    if b.token_ids is not None:
        pieces = [(delta, []) for delta, _ in pieces]
        pieces[0] = (pieces[0][0], list(b.token_ids))
    return pieces


def _reply(b: Behaviour, n: int) -> _Reply:
    calls = _tool_calls(b, n)
    finish = b.finish_reason or ("tool_calls" if calls else "stop")
    return _Reply(content=b.content, reasoning=b.reasoning, tool_calls=calls, pieces=_pieces(b, calls),
                  finish_reason=finish)


def _logprob(i: int) -> float:
    return -0.01 * ((i % 5) + 1)


def _chat_logprobs(ids: list[int], start: int) -> dict[str, Any]:
    return {"content": [{"token": f"token_id:{t}", "logprob": _logprob(start + k), "bytes": None, "top_logprobs": []}
                        for k, t in enumerate(ids)]}


def _usage(prompt: list[int], ids: list[int]) -> dict[str, int]:
    return {"prompt_tokens": len(prompt), "completion_tokens": len(ids), "total_tokens": len(prompt) + len(ids)}


def _chat_message(reply: _Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.reasoning:
        message["reasoning"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return message


def _chat_response(body: dict[str, Any], prompt: list[int], reply: _Reply, n: int) -> dict[str, Any]:
    ids = reply.ids
    choice: dict[str, Any] = {"index": 0, "message": _chat_message(reply), "finish_reason": reply.finish_reason,
                              "logprobs": _chat_logprobs(ids, 0) if body.get("logprobs") else None}
    out: dict[str, Any] = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
                           "model": body.get("model"), "choices": [choice], "usage": _usage(prompt, ids)}
    if body.get("return_token_ids"):
        choice["token_ids"] = ids
        out["prompt_token_ids"] = prompt
    return out


def _completion_response(body: dict[str, Any], prompt: list[int], b: Behaviour, n: int) -> dict[str, Any]:
    ids = b.token_ids if b.token_ids is not None else encode(b.content)
    reply = _reply(b, n)
    choice: dict[str, Any] = {"index": 0, "text": decode(ids), "finish_reason": reply.finish_reason, "logprobs": None}
    if body.get("logprobs") is not None:
        choice["logprobs"] = {"tokens": [f"token_id:{t}" for t in ids],
                              "token_logprobs": [_logprob(k) for k in range(len(ids))]}
    if body.get("return_token_ids"):
        choice["token_ids"] = ids
        choice["prompt_token_ids"] = prompt
    return {"id": f"cmpl-{n}", "object": "text_completion", "created": int(time.time()),
            "model": body.get("model"), "choices": [choice], "usage": _usage(prompt, ids)}


def _sse(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


async def _chat_stream(
    body: dict[str, Any], prompt: list[int], reply: _Reply, b: Behaviour, n: int
) -> AsyncIterator[bytes]:
    head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model")}
    want_ids, want_lp = bool(body.get("return_token_ids")), bool(body.get("logprobs"))
    start = 0
    last = len(reply.pieces) - 1
    for k, (delta, ids) in enumerate(reply.pieces):
        if b.die_after_chunks is not None and k >= b.die_after_chunks:
            # Break the connection the way a crashed engine does: no terminating chunk.
            raise ConnectionAbortedError("scripted death mid-stream")
        choice: dict[str, Any] = {"index": 0, "delta": delta,
                                  "finish_reason": reply.finish_reason if k == last else None,
                                  "logprobs": _chat_logprobs(ids, start) if want_lp and ids else None}
        if want_ids:
            choice["token_ids"] = ids
        chunk: dict[str, Any] = {**head, "choices": [choice]}
        if want_ids and k == 0:
            chunk["prompt_token_ids"] = prompt
        start += len(ids)
        yield _sse(chunk)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield _sse({**head, "choices": [], "usage": _usage(prompt, reply.ids)})
    yield b"data: [DONE]\n\n"


class _State:
    """Script queue, request log and counters of one upstream app."""

    def __init__(self, name: str, models: list[str]) -> None:
        self.name = name
        self.models = models
        self.script: deque[Behaviour] = deque()
        self.requests: list[dict[str, Any]] = []
        self.counter = itertools.count(1)
        self.log_requests = True

    def next(self) -> Behaviour:
        """The next scripted behaviour, or the default answer."""
        return self.script.popleft() if self.script else Behaviour()


def _prompt_ids(path: str, body: dict[str, Any]) -> list[int]:
    if path.endswith("chat/completions"):
        return encode(render(body.get("messages") or []))
    prompt = body.get("prompt")
    return list(prompt) if isinstance(prompt, list) else encode(str(prompt or ""))


async def _generate(state: _State, request: Request, path: str) -> Response:
    body = orjson.loads(await request.body())
    if state.log_requests:
        state.requests.append({"path": path, "body": body, "authorization": request.headers.get("authorization")})
    b, n = state.next(), next(state.counter)
    if b.delay_s:
        await asyncio.sleep(b.delay_s)
    if b.status != 200:
        headers = {"retry-after": b.retry_after} if b.retry_after else {}
        err = {"error": {"message": f"scripted {b.status}", "type": "server_error", "param": None, "code": b.status}}
        return Response(orjson.dumps(err), status_code=b.status, media_type="application/json", headers=headers)
    prompt = _prompt_ids(path, body)
    if path.endswith("chat/completions") and body.get("stream"):
        return StreamingResponse(_chat_stream(body, prompt, _reply(b, n), b, n), media_type="text/event-stream")
    if path.endswith("chat/completions"):
        out = _chat_response(body, prompt, _reply(b, n), n)
    else:
        out = _completion_response(body, prompt, b, n)
    return Response(orjson.dumps(out), media_type="application/json", headers={"x-upstream-name": state.name})


def make_upstream_app(
    name: str = "upstream", models: list[str] | None = None, *, log_requests: bool = True
) -> FastAPI:
    """The fake upstream app; ``app.state.upstream`` holds its script and request log."""
    app = FastAPI()
    state = _State(name, models or ["policy"])
    state.log_requests = log_requests
    app.state.upstream = state
    app.add_api_route("/v1/chat/completions", _generator(state, "/v1/chat/completions"), methods=["POST"])
    app.add_api_route("/v1/completions", _generator(state, "/v1/completions"), methods=["POST"])
    _add_side_routes(app, state)
    return app


def _generator(state: _State, path: str) -> Any:
    async def generate(request: Request) -> Response:
        return await _generate(state, request, path)

    return generate


def _add_side_routes(app: FastAPI, state: _State) -> None:
    @app.get("/v1/models")
    async def models_() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": m, "object": "model", "owned_by": state.name} for m in state.models]}

    @app.post("/tokenize")
    async def tokenize(request: Request) -> dict[str, Any]:
        body = orjson.loads(await request.body())
        ids = encode(render(body["messages"])) if "messages" in body else encode(body.get("prompt", ""))
        return {"tokens": ids, "count": len(ids)}

    @app.post("/pause")
    async def pause() -> dict[str, Any]:
        # A control endpoint like vLLM's; the gateway must never forward to it.
        state.requests.append({"path": "/pause", "body": None})
        return {"paused": True}

    @app.post("/_script")
    async def script(behaviours: list[Behaviour]) -> dict[str, int]:
        state.script.extend(behaviours)
        return {"queued": len(state.script)}

    @app.get("/_requests")
    async def requests_() -> list[dict[str, Any]]:
        return state.requests


class ServerThread:
    """Serve an ASGI app with uvicorn on a free loopback port in a background thread."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        """Start serving and wait until the server accepts connections."""
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

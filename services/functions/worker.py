"""One worker instance of a function component: ``python -m services.functions.worker KIND CLASSPATH CONCURRENCY``.

The pool starts this in its own process (own cgroup, scratch dir as cwd and
TMPDIR, the package's workspace and dependencies on ``PYTHONPATH``). It loads
the processor once, calls ``setup()``, says ``ready``, then serves requests:
one JSON object per line on stdin, answers one per line on the protocol
stream (the original stdout; ``print`` in user code goes to stderr, the
instance log, so it cannot corrupt the protocol). Up to CONCURRENCY calls run
at once on one event loop.

    pool -> worker   {"id": 7, "input": {...}}     {"cancel": 7}
    worker -> pool   {"ready": true, "pid": 123}   {"load_error": "..."}
                     {"id": 7, "output": {...}}    {"id": 7, "error": "ValueError: ..."}
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import sys
import traceback
from typing import Any, BinaryIO

from pydantic import BaseModel

from shared.plugins import load_object
from shared.schema.functions import RewardInput, RewardOutput, RolloutInput, RolloutOutput

__all__ = ["main"]

_MODELS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "rollout": (RolloutInput, RolloutOutput),
    "reward": (RewardInput, RewardOutput),
}
#: Largest request or answer line (a long conversation with tool outputs).
_LINE_LIMIT = 64 * 1024 * 1024


class _Protocol:
    """The answer stream: one JSON object per line, written whole."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def send(self, message: dict[str, Any]) -> None:
        self.stream.write(json.dumps(message, default=str).encode() + b"\n")
        self.stream.flush()


def _take_stdout() -> BinaryIO:
    """The protocol stream: the original stdout; fd 1 then points at stderr for user prints."""
    proto = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _load(kind: str, classpath: str) -> Any:
    obj = load_object(classpath, what=f"{kind} processor", param="classpath")
    processor = obj() if inspect.isclass(obj) else obj
    if not callable(getattr(processor, "process", None)):
        raise TypeError(f"{classpath!r} has no process() method")
    setup = getattr(processor, "setup", None)
    if callable(setup):
        setup()
    return processor


async def _serve_one(processor: Any, kind: str, request: dict[str, Any], proto: _Protocol) -> None:
    in_model, out_model = _MODELS[kind]
    rid = request["id"]
    try:
        inp = in_model.model_validate(request["input"])
        fn = processor.process
        raw = await fn(inp) if inspect.iscoroutinefunction(fn) else await asyncio.to_thread(fn, inp)
        out = raw if isinstance(raw, out_model) else out_model.model_validate(raw)
        proto.send({"id": rid, "output": out.model_dump(mode="json")})
    except asyncio.CancelledError:
        proto.send({"id": rid, "error": "cancelled", "cancelled": True})
    except Exception as exc:  # noqa: BLE001 - user code: any failure is this call's answer
        traceback.print_exc()
        proto.send({"id": rid, "error": f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__})


def _forget(running: dict[int, asyncio.Task[None]], rid: int, _task: asyncio.Task[None]) -> None:
    running.pop(rid, None)


async def _serve(processor: Any, kind: str, concurrency: int, proto: _Protocol) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    gate = asyncio.Semaphore(concurrency)
    running: dict[int, asyncio.Task[None]] = {}

    async def guarded(request: dict[str, Any]) -> None:
        async with gate:
            await _serve_one(processor, kind, request, proto)

    while line := await reader.readline():
        message = json.loads(line)
        if "cancel" in message:
            task = running.get(message["cancel"])
            if task is not None:
                task.cancel()
            continue
        rid = int(message["id"])
        task = asyncio.create_task(guarded(message))
        running[rid] = task
        task.add_done_callback(functools.partial(_forget, running, rid))
    # stdin closed: the pool is stopping this instance; let running calls finish briefly.
    if running:
        await asyncio.wait(list(running.values()), timeout=5.0)


def main(argv: list[str] | None = None) -> int:
    """Load the processor, report ready (or why not), then serve until stdin closes."""
    kind, classpath, concurrency = (argv or sys.argv[1:])[:3]
    proto = _Protocol(_take_stdout())
    try:
        processor = _load(kind, classpath)
    except BaseException as exc:  # noqa: BLE001 - import-time user code may raise anything
        traceback.print_exc()
        detail = getattr(exc, "message", None) or str(exc)
        proto.send({"load_error": f"{type(exc).__name__}: {detail}"})
        return 3
    proto.send({"ready": True, "pid": os.getpid()})
    asyncio.run(_serve(processor, kind, max(1, int(concurrency)), proto))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

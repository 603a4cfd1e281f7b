"""How every service process serves its app: uvicorn, hot paths first, one send per response.

Requests the app's ``DirectEntry`` wants (``shared.web.direct``: the gateway's
proxy calls) go to it instead of the whole app, skipping the layers around the
app; everything else is served as uvicorn serves it.

uvicorn writes a response's status line and headers, then its body, as two
writes on the socket; each is a system call, and on loopback or a LAN each
also wakes the peer for a segment it cannot use alone. ``CoalescingHttpProtocol``
hands uvicorn a transport that gathers the writes made in one turn of the
event loop and sends them together at the end of that turn, so a plain
response leaves in one send (on the gateway's hot path that is about a tenth
of its CPU per call). Streams still go out chunk by chunk, as each chunk is
written in its own turn. WebSocket upgrades get the real transport back.

A service process (``serve_app``, each of ``serve_workers``' children) also
tunes the cyclic garbage collector once its app has started (``tune_gc``):
everything built at startup is frozen out of the collector's reach, and young
collections run less often. Measured on the gateway's hot path under load,
the stock settings spent about a tenth of the process's CPU in the collector,
most of it in full collections that walked the ~140,000 objects of the
imported frameworks every few thousand calls, each a pause of about 100 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from shared.web.direct import DirectEntry, direct_entry_of

__all__ = [
    "GC_GEN0_THRESHOLD", "CoalescingHttpProtocol", "CoalescingTransport", "ServiceServer", "server_config", "serve_app",
    "serve_workers", "tune_gc",
]

log = logging.getLogger("trajforge.web")


class CoalescingTransport:
    """A transport whose writes within one loop turn are sent as one; everything else is the real one's."""

    __slots__ = ("_buffer", "_loop", "_scheduled", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._buffer: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data``; it is sent, with whatever else this turn writes, when the turn ends."""
        if not data:
            return
        self._buffer.append(bytes(data))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def writelines(self, lines: Any) -> None:
        """Queue each of ``lines``."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Send what is queued now."""
        self._scheduled = False
        if not self._buffer:
            return
        data = self._buffer[0] if len(self._buffer) == 1 else b"".join(self._buffer)
        self._buffer.clear()
        if not self.transport.is_closing():
            self.transport.write(data)

    def get_write_buffer_size(self) -> int:
        """Bytes not yet sent: those queued here and those the real transport holds."""
        return sum(map(len, self._buffer)) + self.transport.get_write_buffer_size()

    def write_eof(self) -> None:
        """Send what is queued, then half-close."""
        self.flush()
        self.transport.write_eof()

    def close(self) -> None:
        """Send what is queued, then close (the last response still leaves)."""
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        """Drop what is queued and close at once."""
        self._buffer.clear()
        self.transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


# The served form of each app's direct entry, behind the proxy-headers check as uvicorn wraps the app.
_SERVED_ENTRIES: dict[int, tuple[DirectEntry, Any]] = {}


def _served_entry(config: uvicorn.Config) -> tuple[DirectEntry, Any] | None:
    entry = direct_entry_of(config.app)
    if entry is None:
        return None
    served = _SERVED_ENTRIES.get(id(config))
    if served is None or served[0] is not entry:
        app: Any = entry.served
        if config.proxy_headers:
            app = ProxyHeadersMiddleware(app, trusted_hosts=config.forwarded_allow_ips)
        served = _SERVED_ENTRIES[id(config)] = (entry, app)
    return served


class CoalescingHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol over a ``CoalescingTransport``, hot-path calls to the app's direct entry."""

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        served = _served_entry(self.config) if app is self.app else None  # not the over-limit 503 app
        if served is not None and served[0].wants(cycle.scope):  # type: ignore[arg-type]
            app = served[1]
        super()._start_asgi_task(cycle, app)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]

    def handle_websocket_upgrade(self) -> None:
        """The WebSocket protocol takes over the socket: it gets the real transport, nothing left queued."""
        wrapped = self.transport
        if isinstance(wrapped, CoalescingTransport):
            wrapped.flush()
            self.transport = wrapped.transport
        super().handle_websocket_upgrade()


#: Container allocations (net of frees) between young collections in a service process (CPython's
#: default is 700). A request allocates a few hundred short-lived containers that reference
#: counting frees; collecting every 700 walked the live ones of many requests in flight again and
#: again. Cyclic garbage still goes, a few megabytes later.
GC_GEN0_THRESHOLD = 50_000


def tune_gc() -> None:
    """Collect once, then freeze what survives (the app, its imports, pools, caches) and space out
    young collections, for a process that serves until it exits.

    Frozen objects are never traversed again; full collections then walk only what was made since.
    Only for a dedicated server process: freezing a process that goes on making and dropping
    apps (the test suite, the embedded stack) would keep their cycles for ever.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


class ServiceServer(uvicorn.Server):
    """uvicorn's server for a service process: the collector is tuned once startup is done."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if not self.should_exit:  # started: the app and everything its lifespan built now exist
            tune_gc()


def server_config(app: Any, **options: Any) -> uvicorn.Config:
    """The uvicorn config every service runs with: one send per response, the request middleware's
    access log instead of uvicorn's (which would only build a record per request), our logging setup."""
    options.setdefault("log_config", None)
    options.setdefault("access_log", False)
    return uvicorn.Config(app, http=CoalescingHttpProtocol, **options)


def serve_app(app: Any, *, host: str, port: int, **options: Any) -> None:
    """Serve ``app`` until interrupted (``uvicorn.run`` with ``server_config``; ``tune_gc`` once started)."""
    ServiceServer(server_config(app, host=host, port=port, **options)).run()


def serve_workers(make_app: Callable[[], Any], *, host: str, port: int, workers: int, **options: Any) -> int:
    """Serve the app ``make_app`` builds in ``workers`` processes on one listening socket; the exit code.

    One Python process serves on one core; the gateway's hot path is CPU-bound, so a host with
    cores to spare takes more calls with more processes. The socket is bound here and each child,
    forked before any event loop or app exists, builds its own app (its own database pool, trace
    sink and in-process queue) and accepts on it; the kernel spreads connections over them.
    SIGTERM or SIGINT stops every child; a child that exits stops the rest (no silent half
    capacity), and its exit code is returned.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if workers == 1:
        serve_app(make_app(), host=host, port=port, **options)
        return 0
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    children: list[int] = []
    supervisor = os.getpid()
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # the child: its own app and event loop on the shared socket
            code = 1
            try:
                _stop_with(supervisor)
                ServiceServer(server_config(make_app(), host=host, port=port, **options)).run(sockets=[sock])
                code = 0
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(code)
        children.append(pid)
    sock.close()
    return _supervise(children)


_PR_SET_PDEATHSIG = 1


def _stop_with(supervisor: int) -> None:
    """Have the kernel send this worker SIGTERM when its supervisor dies, however it dies (SIGKILL, the OOM
    killer): otherwise orphaned workers would go on serving the port at part capacity, unsupervised."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != supervisor:  # it died before the request took effect
        os._exit(1)


def _supervise(children: list[int]) -> int:
    """Wait for the children; a stop signal, or one child's exit, stops them all."""
    stopping = False

    def stop() -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, lambda *_: stop()) for sig in (signal.SIGTERM, signal.SIGINT)}
    code = 0
    try:
        left = set(children)
        while left:
            pid, status = os.wait()
            if pid not in left:
                continue
            left.discard(pid)
            if not stopping:  # nobody asked it to stop: the rest must not serve on at part capacity
                exit_code = os.waitstatus_to_exitcode(status)
                log.error("worker process %s exited (%s); stopping the others", pid, exit_code)
                code = exit_code if exit_code > 0 else 1
                stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code

"""The in-memory trace sink."""

from __future__ import annotations

from services.gateway.traces import InMemoryTraceSink, TraceSink
from shared.traces import TraceRecord


async def test_sink_orders_by_sequence_and_indexes_sessions() -> None:
    sink = InMemoryTraceSink()
    assert isinstance(sink, TraceSink)
    for seq in (2, 0, 1):
        await sink.write(TraceRecord(session_id="s", sequence=seq, endpoint="/v1/chat/completions", model="m", request={}))
    await sink.write(TraceRecord(endpoint="/v1/completions", model="m", request={}))
    assert [r.sequence for r in await sink.session("s")] == [0, 1, 2]
    assert await sink.session("none") == [] and len(sink.records) == 4

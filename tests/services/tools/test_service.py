"""ToolService: single calls, batches, sessions and HTTP tool registration."""

from __future__ import annotations

import pytest

from services.tools.http_tool import HttpToolSpec
from services.tools.memory_search import MemoryStore
from services.tools.service import build_default_service
from shared.errors import Conflict
from shared.sandbox.pool import SandboxPool
from tests.services.tools.upstream import serve_upstream


def _call(name: str, arguments: object, call_id: str = "") -> dict[str, object]:
    return {"id": call_id, "function": {"name": name, "arguments": arguments}}


async def test_default_tools_are_listed(pool: SandboxPool) -> None:
    service = build_default_service(pool)
    assert [info.name for info in service.tools()] == [
        "python",
        "bash",
        "calculator",
        "memory_search",
        "memory_write",
    ]


async def test_batch_keeps_order_and_per_call_status(pool: SandboxPool) -> None:
    service = build_default_service(pool)
    calls = [
        _call("calculator", {"expression": "1+1"}, "a"),
        _call("python", {"code": "print('hi')"}, "b"),
        "not a call",
        _call("calculator", "{oops", "d"),
        _call("bash", {"code": "exit 4"}, "e"),
        _call("ghost", {}, "f"),
    ]
    results = await service.call_batch(calls)
    assert [r.tool_call_id for r in results] == ["a", "b", "", "d", "e", "f"]
    assert [r.error_kind for r in results] == [
        None,
        None,
        "invalid_call",
        "invalid_json",
        "nonzero_exit",
        "unknown_tool",
    ]
    assert results[0].content == "2" and "hi" in results[1].content


async def test_session_id_scopes_memory(pool: SandboxPool) -> None:
    memory = MemoryStore()
    memory.add("the launch code is tulip", importance=1.0, session_id="s-42")
    service = build_default_service(pool, memory=memory)
    query = _call("memory_search", {"query": "launch code"})
    assert "tulip" in (await service.call(query, session_id="s-42")).content
    assert (await service.call(query, session_id="other")).content == "[]"


async def test_register_http_tool_then_call_it(pool: SandboxPool) -> None:
    service = build_default_service(pool)
    with serve_upstream() as base_url:
        info = service.register_http_tool(
            HttpToolSpec.model_validate({"name": "greet", "url": f"{base_url}/text"})
        )
        result = await service.call(_call("greet", {"name": "Bo"}))
    assert info.name == "greet" and "greet" in [t.name for t in service.tools()]
    assert result.ok and result.content == "hello Bo"


async def test_builtin_names_cannot_be_taken(pool: SandboxPool) -> None:
    service = build_default_service(pool)
    with pytest.raises(Conflict) as info:
        service.register_http_tool(
            HttpToolSpec.model_validate({"name": "python", "url": "http://127.0.0.1:1/x"})
        )
    assert info.value.status_code == 409 and info.value.param == "name"

"""HTTP-backed user tools against a real local server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from services.tools.http_tool import HttpTool, HttpToolSpec
from services.tools.manager import ToolManager
from tests.conftest import free_port
from tests.services.tools.upstream import serve_upstream

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """The upstream server for this file."""
    with serve_upstream() as url:
        yield url


def _manager(url: str, **extra: object) -> ToolManager:
    spec = HttpToolSpec.model_validate(
        {"name": "weather", "parameters": SCHEMA, "url": url, **extra}
    )
    return ToolManager([HttpTool(spec)])


def _call(arguments: object) -> dict[str, object]:
    return {"id": "h", "function": {"name": "weather", "arguments": arguments}}


async def test_json_answer_is_shown_as_json(base_url: str) -> None:
    result = await _manager(f"{base_url}/weather").call_structured(_call({"city": "Oslo"}))
    assert result.ok and result.content == '{"city": "Oslo", "temp_c": 21, "noise": "xxxxxxxxxx"}'


async def test_text_answer_and_schema_from_spec(base_url: str) -> None:
    manager = _manager(f"{base_url}/text", parameters={"type": "object"}, description="greets")
    assert await manager.acall(_call({"name": "Ada"})) == "hello Ada"
    assert manager.tool_infos()[0].function.description == "greets"


@pytest.mark.parametrize(
    "path, extra, fragment",
    [("/fail", {}, "HTTP 500"), ("/slow", {"timeout_s": 0.3}, "did not answer within 0.3 s")],
)
async def test_upstream_failures_are_upstream_errors(
    base_url: str, path: str, extra: dict[str, object], fragment: str
) -> None:
    result = await _manager(f"{base_url}{path}", **extra).call_structured(_call({"city": "x"}))
    assert (result.ok, result.error_kind) == (
        False,
        "upstream_error",
    ) and fragment in result.content


async def test_unreachable_tool_and_invalid_arguments() -> None:
    manager = _manager(f"http://127.0.0.1:{free_port()}/weather")
    down = await manager.call_structured(_call({"city": "x"}))
    assert down.error_kind == "upstream_error" and "unreachable" in down.content
    bad = await manager.call_structured(_call({"town": "x"}))
    assert bad.error_kind == "invalid_arguments"


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "bad name"},
        {"url": "not a url"},
        {"timeout_s": 500},
        {"parameters": {"type": "nonsense"}},
    ],
)
def test_spec_refuses_bad_registrations(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        HttpToolSpec.model_validate({"name": "ok", "url": "http://127.0.0.1:1/x", **fields})

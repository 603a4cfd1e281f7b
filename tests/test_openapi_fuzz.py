"""Bad input at every service: schemathesis against each service's own OpenAPI, over loopback HTTP.

Every service runs as its own app (``trajforge serve NAME``'s app) on a port
of its own. Its schema must be valid (every operation loads) and no generated
request, well-formed or not, may get a 5xx. Examples per operation are few and
the seed is fixed, so the run is short and repeatable. Operations with a body
or query also get schema-violating input; operations that would run the model
or start background jobs get only that, which must be refused before any work
starts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.core.result import Err, Ok
from schemathesis.generation import GenerationMode
from sqlalchemy.ext.asyncio import create_async_engine

from services.app import SERVICE_NAMES, service_spec
from shared.auth import create_key
from shared.db.session import make_sessionmaker
from shared.settings import Settings
from shared.web import create_app
from tests.conftest import LoopbackServer

# Dataset uploads are raw JSONL bytes: send generated bodies as they are.
schemathesis.serializer.alias("application/x-ndjson", "application/octet-stream")

#: Examples per operation and mode: enough to hit every field's edges once, small enough to stay quick.
EXAMPLES = 3
#: Operations that run the policy model or start jobs: they are only sent input their schema forbids.
NEGATIVE_ONLY = {
    "inference": {"POST /v1/chat/completions", "POST /v1/completions", "POST /generate"},
    "gateway": {"POST /v1/chat/completions", "POST /v1/completions",
                "POST /sessions/{session_id}/v1/chat/completions", "POST /sessions/{session_id}/v1/completions",
                "POST /sessions/{session_id}/attempts/{attempt}/v1/chat/completions",
                "POST /sessions/{session_id}/attempts/{attempt}/v1/completions"},
    "rollout": {"POST /v1/rollouts"},
    "cleaning": {"POST /v1/clean/jobs"},
}


async def _admin_key(settings: Settings) -> str:
    engine = create_async_engine(settings.effective_database_url)
    try:
        async with make_sessionmaker(engine)() as session:
            _, key = await create_key(session, "openapi-fuzz", salt=settings.key_salt, scope="admin")
            await session.commit()
        return key
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
def admin_key(settings: Settings) -> str:
    return asyncio.run(_admin_key(settings))


@pytest.fixture(params=SERVICE_NAMES)
def served(request: pytest.FixtureRequest, settings: Settings) -> Iterator[tuple[str, str]]:
    name = str(request.param)
    app = create_app(service_spec(name), settings=settings)
    with LoopbackServer(app) as server:
        yield name, server.url


def _label(op: Any) -> str:
    return f"{op.method.upper()} {op.path}"


def _fuzz(op: Any, mode: GenerationMode, url: str, headers: dict[str, str], failures: list[str]) -> None:
    @seed(20261201)
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=op.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        response = case.call(base_url=url, headers=headers, timeout=30)
        # 501 is the documented answer of a route this backend does not implement (the CPU engine's
        # weight-transfer round): a deliberate problem document, never a crash.
        refused = response.status_code == 501 and any(
            k.lower() == "content-type" and "problem+json" in str(v) for k, v in response.headers.items())
        if response.status_code >= 500 and not refused:
            failures.append(f"{_label(op)} [{mode}] -> {response.status_code}: {response.text[:300]}\n"
                            f"    {case.as_curl_command(headers=headers)[:600]}")

    try:
        run()
    except Unsatisfiable:  # negative mode on an operation without inputs: there is nothing to violate
        assert mode == GenerationMode.NEGATIVE, f"{_label(op)}: no valid input could be generated"


def _undeclared_path_parameters(document: dict[str, Any]) -> list[str]:
    """Operations whose path names a ``{parameter}`` the operation does not declare (an invalid schema)."""
    missing = []
    for path, item in document.get("paths", {}).items():
        named = set(re.findall(r"\{([^}]+)\}", path))
        for method, op in item.items():
            if not isinstance(op, dict) or method == "parameters":
                continue
            params = [*item.get("parameters", []), *op.get("parameters", [])]
            declared = {p.get("name") for p in params if p.get("in") == "path"}
            missing += [f"{method.upper()} {path}: {{{n}}}" for n in sorted(named - declared)]
    return missing


def test_each_service_schema_is_valid_and_never_answers_5xx(served: tuple[str, str], admin_key: str) -> None:
    name, url = served
    document = httpx.get(url + "/openapi.json", timeout=30).json()
    assert not _undeclared_path_parameters(document), f"{name}: {_undeclared_path_parameters(document)}"
    schema = schemathesis.openapi.from_dict(document)
    results = list(schema.get_all_operations())
    invalid = [str(r.err()) for r in results if isinstance(r, Err)]
    assert not invalid, f"{name}: invalid operations in its OpenAPI: {invalid}"
    operations = [r.ok() for r in results if isinstance(r, Ok)]
    assert operations, f"{name} declares no operations"
    headers = {"authorization": f"Bearer {admin_key}"}
    failures: list[str] = []
    for op in operations:
        modes = []
        if _label(op) not in NEGATIVE_ONLY.get(name, set()):
            modes.append(GenerationMode.POSITIVE)
        if len(op.body) or len(op.query):  # bad bodies and queries; bad path segments only route nowhere
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:
            _fuzz(op, mode, url, headers, failures)
    assert not failures, f"{name}: server errors on generated input:\n" + "\n".join(failures)

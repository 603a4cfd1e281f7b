"""The SDK twins against a real server on loopback: same endpoints, same error classes."""

from __future__ import annotations

import uuid

import pytest

from shared.auth import create_key
from shared.client import AsyncClient, Client
from shared.db.session import create_engine_for, make_sessionmaker
from shared.errors import AuthenticationError, InvalidInput, NotFound
from shared.settings import Settings
from tests.conftest import LoopbackServer


@pytest.fixture
async def served(settings: Settings):  # type: ignore[no-untyped-def]
    from services.cleaning.app import create_app

    engine = create_engine_for(settings)
    async with make_sessionmaker(engine)() as session:
        _, key = await create_key(session, "sdk", salt=settings.key_salt)
        await session.commit()
    await engine.dispose()
    with LoopbackServer(create_app(settings)) as server:
        yield server.url, key


def test_sync_client_round_trip_and_errors(served) -> None:  # type: ignore[no-untyped-def]
    url, key = served
    with Client(url, api_key=key) as tf:
        assert tf.health()["status"] == "ok"
        info = tf.upload_dataset("sdk", b'{"messages": [{"role": "user", "content": "hi"}]}\n')
        assert tf.get_dataset(info["id"])["row_count"] == 1
        with pytest.raises(NotFound):
            tf.get_dataset(str(uuid.uuid4()))
        with pytest.raises(InvalidInput, match="no JSONL rows"):
            tf.upload_dataset("empty", b"")
    with Client(url) as anonymous, pytest.raises(AuthenticationError):
        anonymous.get_dataset(info["id"])


async def test_async_client_matches_the_sync_one(served) -> None:  # type: ignore[no-untyped-def]
    url, key = served
    async with AsyncClient(url, api_key=key) as tf:
        assert (await tf.ready())["status"] == "ready"
        info = await tf.upload_dataset("sdk-async", b'{"a": 1}\n{"b": 2}\n')
        rows = await tf.dataset_rows(info["id"], limit=1)
        assert rows["items"][0]["data"] == {"a": 1} and rows["next_offset"] == 1

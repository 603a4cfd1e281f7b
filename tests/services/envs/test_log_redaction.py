from __future__ import annotations

import logging

import pytest

from services.envs.log_redaction import RedactCapabilityKeys, redact_path


def test_redact_path_hides_only_the_key() -> None:
    assert (
        redact_path("GET /envs/counter/k/sk-secret/ws HTTP/1.1")
        == "GET /envs/counter/k/***/ws HTTP/1.1"
    )
    assert redact_path("/envs/counter/k/sk-secret") == "/envs/counter/k/***"
    assert redact_path("/envs/counter/ws") == "/envs/counter/ws"


def test_filter_rewrites_access_log_records(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.access")
    logger.addFilter(RedactCapabilityKeys())
    with caplog.at_level(logging.INFO, logger="test.access"):
        logger.info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:1", "GET", "/envs/c/k/sk-9/health", "1.1", 200
        )
    assert "sk-9" not in caplog.text and "/envs/c/k/***/health" in caplog.text

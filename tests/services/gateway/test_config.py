"""Gateway config files."""

from __future__ import annotations

import json
from pathlib import Path

from services.gateway.config import load_gateway_config


def test_yaml_and_json_configs_load_the_same(tmp_path: Path) -> None:
    data = {"upstreams": [{"model": "policy", "url": "http://127.0.0.1:8001/", "return_token_ids": False},
                          {"model": "policy", "url": "http://127.0.0.1:8002", "name": "r2"}],
            "rate_limit": {"rate_per_s": 10, "burst": 20}}
    (tmp_path / "g.json").write_text(json.dumps(data))
    (tmp_path / "g.yaml").write_text(
        "upstreams:\n  - {model: policy, url: 'http://127.0.0.1:8001/', return_token_ids: false}\n"
        "  - {model: policy, url: 'http://127.0.0.1:8002', name: r2}\n"
        "rate_limit: {rate_per_s: 10, burst: 20}\n"
    )
    a, b = load_gateway_config(tmp_path / "g.json"), load_gateway_config(tmp_path / "g.yaml")
    assert a == b
    assert [u.replica_id for u in a.upstreams] == ["http://127.0.0.1:8001", "r2"]
    assert a.upstreams[0].return_token_ids is False and a.rate_limit.burst == 20


def test_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    (tmp_path / "e.yaml").write_text("")
    assert load_gateway_config(tmp_path / "e.yaml").upstreams == []

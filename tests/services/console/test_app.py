"""The console service over HTTP: the single page and its assets, and the API proxy of a standalone console."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
import pytest

from services.console.app import SERVICE
from services.console.assets import STATIC_DIR
from services.console.proxy import target_url
from shared.errors import NotFound
from shared.settings import Settings
from shared.web import create_app
from tests.conftest import REPO_ROOT, LoopbackServer
from tests.services.console.conftest import ConsoleStack


def test_every_page_path_answers_the_page_and_assets_have_types(console: ConsoleStack) -> None:
    with httpx.Client(base_url=console.url) as anonymous:  # no key: the page holds no data
        page = anonymous.get("/ui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        for path in ("/ui", "/ui/rollouts/abc", "/ui/rollouts/abc/groups/def", "/ui/trajectories/x",
                     "/ui/sessions/s", "/ui/clean/jobs/j", "/ui/search", "/ui/signin"):
            assert anonymous.get(path).content == page.content, path
        script = anonymous.get("/ui/static/js/main.js")
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
        assert anonymous.get("/ui/static/console.css").headers["content-type"].startswith("text/css")
        assert anonymous.get("/ui/static/nope.js").status_code == 404
        for bad in ("/ui/static/../app.py", "/ui/static/%2e%2e/app.py", "/ui/static/js/../../app.py"):
            resp = anonymous.get(bad)  # never a file outside the static folder
            assert resp.status_code == 404 or resp.content == page.content, bad
            assert b"ServiceSpec" not in resp.content
        assert anonymous.get("/ui/config.json").json() == {"api_base": "", "ui_base": "/ui"}
        assert anonymous.get("/v1/rollouts").status_code == 401  # the data is not public


def test_page_loads_nothing_from_other_origins() -> None:
    for path in STATIC_DIR.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert "http://" not in text and "https://" not in text, path


def test_package_data_ships_every_asset() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["services.console"]
    package = STATIC_DIR.parent
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    assert shipped == {p for p in STATIC_DIR.rglob("*") if p.is_file()}


def test_target_url_picks_the_longest_prefix() -> None:
    routes = {"/v1/clean": "http://cleaning:8000/v1/clean", "/inference": "http://inference:8000"}
    assert target_url("/v1/clean/jobs/1", api_url="http://api", routes=routes) == "http://cleaning:8000/v1/clean/jobs/1"
    assert target_url("/inference/detokenize", api_url="http://api", routes=routes) == "http://inference:8000/detokenize"
    assert target_url("/v1/cleanup", api_url="http://api/", routes=routes) == "http://api/v1/cleanup"
    with pytest.raises(NotFound):
        target_url("/v1/rollouts", api_url="", routes={})


def test_standalone_console_forwards_calls_and_streams_events(settings: Settings, console: ConsoleStack) -> None:
    own = settings.model_copy(update={"console_api_url": console.url,
                                      "console_routes": {"/v1/sessions": console.url + "/v1/sessions"}})
    with LoopbackServer(create_app(SERVICE, settings=own)) as server, httpx.Client(base_url=server.url) as c:
        assert c.get("/ui/config.json").json()["api_base"] == "/ui/api"
        auth = {"authorization": f"Bearer {console.key}"}
        listed = c.get("/ui/api/v1/rollouts", params={"limit": 100}, headers=auth)
        assert listed.status_code == 200 and console.routing_job in listed.text
        refused = c.get("/ui/api/v1/rollouts", headers={"authorization": "Bearer tf_" + "x" * 43})
        assert refused.status_code == 401 and refused.json()["code"] == "invalid_api_key"
        with c.stream("GET", f"/ui/api/v1/rollouts/{console.routing_job}/events", headers=auth) as events:
            assert events.headers["content-type"].startswith("text/event-stream")
            assert "event: end" in events.read().decode()
        merged = c.get(f"/ui/api/v1/sessions/{console.session_id}/trajectory", headers=auth)
        assert merged.status_code == 200 and merged.json()["mismatches"][0]["cause"] == "template_strip"
        cancel = c.post(f"/ui/api/v1/rollouts/{console.routing_job}/cancel", headers=auth)
        assert cancel.status_code == 200 and cancel.json()["status"] == "succeeded"


def test_console_is_listed_for_serve_and_mounted_all_in_one() -> None:
    from services.app import SERVICE_NAMES, service_spec

    assert "console" in SERVICE_NAMES and service_spec("console") is SERVICE
    assert Path(STATIC_DIR / "index.html").is_file()


def test_assets_outside_the_static_folder_are_refused() -> None:
    from services.console.assets import asset

    assert asset("js/main.js")[1] == "text/javascript"
    for bad in ("../app.py", "js/../../routes.py", "/etc/passwd", "js"):
        with pytest.raises(NotFound):
            asset(bad)

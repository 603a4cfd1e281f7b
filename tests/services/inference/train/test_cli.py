"""``trajforge train SPEC.yaml`` without ``--url``: the rounds go to the local server the composition supplies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from services.inference.train import cli as train_cli
from shared.errors import TrajforgeError
from shared.local_server import Composition, LocalServer
from shared.settings import Settings
from tests.conftest import REPO_ROOT

SPEC = REPO_ROOT / "examples" / "train_tool_call.yaml"


def _runner_app(composition: Composition | None = None) -> typer.Typer:
    app = typer.Typer(context_settings={"obj": composition})
    train_cli.register(app)
    app.command("noop")(lambda: None)  # a second command keeps ``train`` a named subcommand
    return app


def _no_model_load(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the model loaded before the server was known")


def test_without_url_or_a_local_server_it_asks_for_a_url_before_loading_the_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(train_cli.TrainablePolicy, "load", _no_model_load)
    result = CliRunner().invoke(_runner_app(), ["train", str(SPEC), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "pass --url" in result.output


def test_without_url_the_rounds_go_to_the_local_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    served: list[str] = []

    @contextlib.contextmanager
    def local(settings: Settings, *, log_level: str = "WARNING") -> Iterator[LocalServer]:
        served.append(log_level)
        yield SimpleNamespace(url="http://127.0.0.1:9", api_key="k")

    def run_training(client: Any, *args: Any, **kwargs: Any) -> Any:
        raise TrajforgeError(f"reached {client.__class__.__name__} of the local server")

    monkeypatch.setattr(train_cli.TrainablePolicy, "load", lambda *a, **k: object())
    monkeypatch.setattr(train_cli, "run_training", run_training)
    result = CliRunner().invoke(_runner_app(Composition(local_server=local)),
                                ["train", str(SPEC), "--out", str(tmp_path)])
    assert result.exit_code == 1 and "reached Client of the local server" in result.output
    assert served == ["ERROR"]  # the embedded server's own logs stay quiet under the training log

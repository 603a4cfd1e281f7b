"""``trajforge rollout SPEC.yaml``: spec files, clear exit-2 errors, and a full run against a loopback server."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
import typer
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from typer.testing import CliRunner

from services.rollout import cli as rollout_cli
from services.rollout.export import ExportItem, write_parquet
from shared.local_server import Composition, LocalServer
from shared.rollout_spec_file import RolloutSpecError, load_spec_file, task_from_row
from shared.schema import Trajectory
from shared.settings import Settings
from tests.conftest import REPO_ROOT, LoopbackServer, shared_data_dir

EXAMPLE = REPO_ROOT / "examples" / "rollout_tool_routing.yaml"


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_example_is_a_valid_spec() -> None:
    body = load_spec_file(EXAMPLE)
    assert body["group_size"] == 4 and body["env"]["name"] == "tool_routing" and len(body["tasks"]) == 4
    assert body["reward"]["components"][0]["name"] == "tool_call"


def test_tasks_file_rows_become_prompts_up_to_the_first_assistant_turn(tmp_path: Path) -> None:
    for name in ("bfcl_v4_single_turn.jsonl", "glaive_toolcall_en_llamafactory.jsonl"):
        data = shared_data_dir() / name
        body = load_spec_file(_spec(tmp_path, f"group_size: 2\ntasks_file: {data}\nlimit: 3\n"))
        assert len(body["tasks"]) == 3 and "tasks_file" not in body and "limit" not in body
        for task in body["tasks"]:
            assert task["messages"] and all(m["role"] != "assistant" for m in task["messages"])
            assert any(m["role"] == "user" for m in task["messages"])
    bfcl = load_spec_file(_spec(tmp_path, f"group_size: 2\ntasks_file: {shared_data_dir()}/bfcl_v4_single_turn.jsonl\n"
                                          "limit: 1\n"))["tasks"][0]
    assert bfcl["id"] == "simple_python_3" and bfcl["tools"][0]["function"]["name"] == "algebra_quadratic_roots"
    assert bfcl["ground_truth"]["tool_calls"][0]["arguments"] == {"a": 1, "b": -3, "c": 2}


def test_task_from_row_keeps_id_tools_and_ground_truth() -> None:
    row = {"id": 9, "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                                 {"role": "assistant", "content": "a"}, {"role": "user", "content": "later"}],
           "ground_truth": {"decision": "no_tool_call"}}
    task = task_from_row(row, 1)
    assert task["id"] == "9" and [m["content"] for m in task["messages"]] == ["s", "u"]
    assert task["ground_truth"] == {"decision": "no_tool_call"} and task["tools"] == []


@pytest.mark.parametrize(("text", "message"), [
    ("- just\n- a list\n", "must hold a mapping"),
    ("group_size: [unclosed\n", "cannot read"),
    ("group_size: 2\n", "needs 'tasks'"),
    ("group_size: 0\ntasks: [{id: a, messages: [{role: user, content: hi}]}]\n", "group_size must be an integer from 1 to 64"),
    ("tasks: [{id: a, messages: [{role: user, content: hi}]}]\n", "needs 'group_size'"),
    ("group_size: 2\ntasks: [{id: lonely, messages: [{role: system, content: hi}]}]\n", "task 'lonely' has no user turn"),
    ("group_size: 2\ntasks: [{id: a, messages: [{role: wizard, content: hi}]}]\n", "task 'a': bad message"),
    ("group_size: 2\ntasks_file: missing.jsonl\n", "does not exist"),
    ("group_size: 2\ntasks: [{id: a, messages: [{role: user, content: hi}]}]\nlimit: -1\n", "limit must be a positive"),
    ("group_size: 2\ntasks: []\ntasks_file: x.jsonl\n", "either 'tasks' or 'tasks_file'"),
    ("group_size: 2\ntasks: [{id: a, messages: [{role: user, content: hi}]}]\nlimits: {max_turns: 0}\n",
     "max_turns must be an integer"),
])
def test_bad_specs_are_refused_with_the_reason(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RolloutSpecError, match=message):
        load_spec_file(_spec(tmp_path, text))


def test_a_bad_line_in_the_tasks_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{oops\n')
    with pytest.raises(RolloutSpecError, match="tasks.jsonl line 2"):
        load_spec_file(_spec(tmp_path, "group_size: 2\ntasks_file: tasks.jsonl\n"))


def test_the_command_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "group_size: 2\ntasks: [{id: lonely, messages: [{role: system, content: hi}]}]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJFORGE_")}
    env |= {"TRAJFORGE_HOME": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, "-m", "services.cli", "rollout", str(spec)], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    assert "has no user turn" in result.stderr and "Traceback" not in result.stderr


# --- a full run against a stand-in server speaking the rollout contract over real HTTP ---------------------

JOB = str(uuid.uuid4())


def _parquet() -> bytes:
    traj = Trajectory.model_validate({"id": "t0", "group_id": "g", "messages": [{"role": "user", "content": "hi"}],
                                      "tokens": {"prompt_ids": [1], "response_ids": [2], "loss_mask": [1]}})
    buffer = io.BytesIO()
    write_parquet([ExportItem(traj, task_id="status-a1", reward=1.0, advantage=0.0)], buffer)
    return buffer.getvalue()


def _stand_in(refuse: bool = False) -> FastAPI:
    app = FastAPI()
    counts = {"stop_reason:stop": 3, "stop_reason:max_turns": 1, "trajectories": 4, "failed": 0}
    done = {"id": JOB, "status": "succeeded", "total_groups": 1, "done_groups": 1, "counts": counts}

    @app.post("/v1/rollouts")
    async def create(request: Request) -> JSONResponse:
        body = await request.json()
        if refuse:
            return JSONResponse({"status": 422, "code": "validation_failed", "detail": "unknown env 'nope'"},
                                status_code=422, media_type="application/problem+json")
        app.state.body = body
        return JSONResponse({**done, "status": "pending", "done_groups": 0, "counts": {}}, status_code=202)

    @app.get("/v1/rollouts/{job_id}")
    async def read(job_id: str) -> JSONResponse:
        return JSONResponse(done)

    @app.get("/v1/rollouts/{job_id}/events")
    async def events(job_id: str) -> StreamingResponse:
        lines = [("progress", {"done_groups": 1, "total_groups": 1, "counts": counts}),
                 ("group", {"task_id": "status-a1", "group_id": "g", "rewards": [1.0, 0.5, None, 0.0]}),
                 ("end", {"status": "succeeded"})]
        chunks = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in lines]
        return StreamingResponse(iter(chunks), media_type="text/event-stream")

    @app.get("/v1/rollouts/{job_id}/export")
    async def export(format: str) -> Response:  # the contract's query name
        body = _parquet() if format == "parquet" else b'{"id": "t0"}\n'
        return Response(body, media_type="application/octet-stream")

    return app


def _runner_app(composition: Composition | None = None) -> typer.Typer:
    app = typer.Typer(context_settings={"obj": composition})
    rollout_cli.register(app)
    app.command("noop")(lambda: None)  # a second command keeps ``rollout`` a named subcommand
    return app


def test_a_run_follows_the_job_prints_the_summary_and_writes_exports(tmp_path: Path) -> None:
    server_app = _stand_in()
    out_parquet, out_jsonl = tmp_path / "o" / "r.parquet", tmp_path / "o" / "r.jsonl"
    with LoopbackServer(server_app) as server:
        result = CliRunner().invoke(_runner_app(), ["rollout", str(EXAMPLE), "--url", server.url, "--api-key", "k",
                                                    "-o", str(out_parquet), "--jsonl", str(out_jsonl)])
    assert result.exit_code == 0, result.output
    assert server_app.state.body["env"]["name"] == "tool_routing" and len(server_app.state.body["tasks"]) == 4
    assert "succeeded" in result.output and "stop: max_turns" in result.output and "status-a1" in result.output
    assert "0.500" in result.output  # mean reward of the scored members (1.0, 0.5, 0.0)
    assert pq.read_table(out_parquet).column("reward").to_pylist() == [1.0]
    assert out_jsonl.read_text() == '{"id": "t0"}\n'


def test_a_spec_the_server_refuses_exits_2_with_its_reason(tmp_path: Path) -> None:
    with LoopbackServer(_stand_in(refuse=True)) as server:
        result = CliRunner().invoke(_runner_app(), ["rollout", str(EXAMPLE), "--url", server.url])
    assert result.exit_code == 2 and "unknown env 'nope'" in result.output


def test_without_url_the_run_goes_to_the_local_server_the_composition_supplies() -> None:
    served: list[str] = []
    with LoopbackServer(_stand_in()) as server:
        @contextlib.contextmanager
        def local(settings: Settings, *, log_level: str = "WARNING") -> Iterator[LocalServer]:
            served.append(log_level)
            yield SimpleNamespace(url=server.url, api_key="k")

        result = CliRunner().invoke(_runner_app(Composition(local_server=local)), ["rollout", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert served == ["WARNING"] and "succeeded" in result.output


def test_without_url_or_a_local_server_the_command_asks_for_a_url() -> None:
    result = CliRunner().invoke(_runner_app(), ["rollout", str(EXAMPLE)])
    assert result.exit_code == 2 and "pass --url" in result.output


def test_an_unreachable_server_exits_1_with_the_reason(tmp_path: Path) -> None:
    result = CliRunner().invoke(_runner_app(), ["rollout", str(EXAMPLE), "--url", "http://127.0.0.1:9"])
    assert result.exit_code == 1 and "ConnectError" in result.output



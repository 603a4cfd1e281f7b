"""The code-execution env inside the real app: sandboxed runs, test-checked submissions."""

from __future__ import annotations

from services.envs.app import SERVICE

TASK = {"prompt": "Define add(a, b).", "tests": "assert add(2, 3) == 5\nprint('tests ok')"}


async def _reset(client):  # type: ignore[no-untyped-def]
    reset = await client.post("/envs/code/reset", json={"trajectory": TASK})
    assert reset.status_code == 200, reset.text
    assert "Define add" in reset.json()["observation"]["text"]
    return reset.json()["session_id"]


async def _step(client, sid, tool, args):  # type: ignore[no-untyped-def]
    resp = await client.post("/envs/code/step", json={"session_id": sid,
                                                      "action": {"tool_name": tool, "arguments": args}})
    assert resp.status_code == 200, resp.text
    return resp.json()


async def test_python_and_bash_run_in_the_sandbox(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    sid = await _reset(client)
    out = await _step(client, sid, "python", {"code": "import os; print(6 * 7, os.getuid() != 0)"})
    assert "42 True" in out["observation"]["text"] and not out["done"]
    net = await _step(client, sid, "bash", {"command": "cat /etc/hostname >/dev/null; echo $HOME; exit 3"})
    assert "exit 3" in net["observation"]["text"]


async def test_a_correct_submission_passes_the_tests(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    sid = await _reset(client)
    good = await _step(client, sid, "submit", {"code": "def add(a, b):\n    return a + b"})
    assert good["done"] and good["reward"] == 1.0 and "passed" in good["observation"]["text"]


async def test_a_wrong_submission_fails_and_bad_arguments_are_observations(make_client) -> None:  # type: ignore[no-untyped-def]
    client = await make_client(SERVICE)
    sid = await _reset(client)
    empty = await _step(client, sid, "python", {"code": "   "})
    assert "non-empty" in empty["observation"]["text"]
    bad = await _step(client, sid, "submit", {"code": "def add(a, b):\n    return a - b"})
    assert bad["done"] and bad["reward"] == 0.0 and "AssertionError" in bad["observation"]["text"]

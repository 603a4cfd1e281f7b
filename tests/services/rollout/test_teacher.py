"""Teacher logprobs of the student's own tokens (real SmolLM2 engine as student and teacher, on CPU).

The student is the local engine; the teacher is the same model under a second
gateway name with another system prompt, reached through the shard's gateway.
Stored teacher logprobs must equal a direct torch forward pass of the teacher
over the same tokens, and the export must carry the distillation advantages.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from sqlalchemy.ext.asyncio import AsyncEngine

import services.inference.service as inference_service
from services.gateway.app import LOCAL_UPSTREAM_URL
from shared.settings import Settings
from tests.services.rollout.test_processor_jobs import QUESTION, Harness, _harness

TEACHER = "smol-teacher"
TEACHER_SYSTEM = "You are a careful geography teacher. Answer in one short sentence."


def _gateway_config(tmp_path: Path, student: str) -> str:
    """Two gateway names for the one local engine: the student's and the teacher's."""
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({"upstreams": [
        {"model": student, "url": LOCAL_UPSTREAM_URL, "name": "student"},
        {"model": TEACHER, "url": LOCAL_UPSTREAM_URL, "name": "teacher", "served_model": student}]}))
    return str(path)


@pytest.fixture
async def teacher_harness(settings: Settings, engine: AsyncEngine, local_holder: Any, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> Any:
    """The rollout app whose shards reach a gateway serving the student and the teacher names."""
    monkeypatch.setattr(inference_service, "_holder", local_holder)
    config = _gateway_config(tmp_path, local_holder.served_name)
    async with _harness(settings, engine, gateway_config=config) as h:
        yield h


async def _run(h: Harness, teacher: dict[str, Any], *, group_size: int = 2) -> tuple[dict[str, Any], list[Any]]:
    body = {"tasks": [{"id": "t0", "messages": [{"role": "user", "content": QUESTION}]}], "group_size": group_size,
            "sampling": {"max_tokens": 4, "temperature": 1.0, "seed": 3}, "teacher": teacher,
            "limits": {"timeout_s": None}}  # a shared CPU may be slow: no time budget
    return await h.submit(body)


def _direct_logprobs(model: Any, prompt: list[int], response: list[int]) -> list[float]:
    """The teacher's logprob of each response token, straight from a torch forward pass."""
    import torch

    ids = [*prompt, *response]
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    logprobs = torch.log_softmax(logits[:-1], dim=-1).gather(1, torch.tensor(ids[1:]).unsqueeze(1)).squeeze(1)
    return [float(v) for v in logprobs[len(prompt) - 1:]]


@pytest.mark.timeout(900)  # the real model on a shared CPU
async def test_stored_teacher_logprobs_equal_a_direct_forward_pass(teacher_harness: Harness, local_holder: Any,
                                                                   smol_tokenizer: Any) -> None:
    h = teacher_harness
    job, items = await _run(h, {"model": TEACHER, "system_prompt": TEACHER_SYSTEM, "distill_weight": 0.5})
    assert job["status"] == "succeeded" and len(items) == 2, job
    engine = await local_holder.get()
    teacher_prompt = list(smol_tokenizer.apply_chat_template(
        [{"role": "system", "content": TEACHER_SYSTEM}, {"role": "user", "content": QUESTION}],
        add_generation_prompt=True, tokenize=True, return_dict=False))
    for item in items:
        tokens, meta = item.get("tokens"), item["metadata"]["teacher"]
        assert meta["status"] == "ok", (item["stop_reason"], item["metadata"], tokens)
        assert meta["model"] == TEACHER and meta["prompt_tokens"] == len(teacher_prompt)
        assert tokens["prompt_ids"] != teacher_prompt  # the teacher really saw another context
        direct = _direct_logprobs(engine.model, teacher_prompt, tokens["response_ids"])
        stored = tokens["teacher_logprobs"]
        assert len(stored) == len(tokens["response_ids"]) and all(m == 1 for m in tokens["loss_mask"])
        assert max(abs(s - d) for s, d in zip(stored, direct, strict=True)) < 1e-4
        kl = [s - t for s, t in zip(tokens["logprobs"], stored, strict=True)]
        assert meta["reverse_kl"] == pytest.approx(sum(kl) / len(kl), abs=1e-9)
    export = await h.client.get(f"/v1/rollouts/{job['id']}/export", params={"format": "parquet"})
    assert export.status_code == 200
    rows = {r["id"]: r for r in pq.read_table(io.BytesIO(export.content)).to_pylist()}
    for item in items:
        row = rows[item["id"]]
        expected = [t - s for s, t in zip(item["tokens"]["logprobs"], item["tokens"]["teacher_logprobs"], strict=True)]
        assert row["distill_advantages"] == pytest.approx(expected, abs=1e-5)
        assert row["teacher_logprobs"] == pytest.approx(item["tokens"]["teacher_logprobs"], abs=1e-6)
        # No reward spec: the reward advantage is 0, so the combined advantage is the weighted distillation.
        assert row["advantages"] == pytest.approx([0.5 * e for e in expected], abs=1e-5)


async def test_a_teacher_the_gateway_does_not_serve_is_refused(teacher_harness: Harness) -> None:
    body = {"tasks": [{"id": "t0", "messages": [{"role": "user", "content": QUESTION}]}], "group_size": 1,
            "teacher": {"model": "no-such-teacher"}}
    resp = await teacher_harness.client.post("/v1/rollouts", json=body)
    assert resp.status_code == 422 and resp.json()["param"] == "teacher.model", resp.text
    assert "no-such-teacher" in resp.text and TEACHER in resp.text

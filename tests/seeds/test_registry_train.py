"""AgentSDK seed, "TrainRegistry": ``register(train_engine, cluster_mode, rollout_method, train_method)``
/ ``get_method`` and the built-in ``verl`` ``hybrid`` and ``one_step_off`` methods, run for real:
token rollouts against the local engine (SCRIPTED policy: fixed reply, real tokenizer and engine
path), a real torch actor trained through ``update_policy``, weights synced into the engine.

trajforge names: ``aura.trainer.train_register`` is ``services.rollout.train_register``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from services.inference.backends.local import LocalBackend
from services.inference.engine import Engine
from services.inference.scripted import scripted_model
from services.inference.service import EngineHolder
from services.rollout.adapters import BackendPolicy
from services.rollout.token_rollout import MultiTurnRollout
from services.rollout.train_register import TrainRegistry, registry
from shared.schema import SamplingParams, Trajectory
from tests.seeds.seed_support import smol_tokenizer


class TinyActor:
    """A real (tiny) torch policy head trained on verl's batch fields."""

    def __init__(self, vocab: int) -> None:
        import torch

        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Embedding(vocab, 8), torch.nn.Linear(8, vocab))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.batches: list[dict[str, Any]] = []

    def update_policy(self, data: dict[str, Any]) -> dict[str, float]:
        import torch

        self.batches.append(data)
        logits = self.model(data["input_ids"][:, :-1])
        logp = torch.log_softmax(logits, dim=-1).gather(-1, data["input_ids"][:, 1:, None]).squeeze(-1)
        resp = logp[:, -data["responses"].shape[1]:]
        mask = data["response_mask"].float()
        loss = -(resp * mask).sum() / mask.sum().clamp(min=1)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return {"loss": float(loss.detach())}


@pytest.fixture
def engine() -> Iterator[Engine]:
    tok = smol_tokenizer()
    eng = Engine(scripted_model(tok, "42"), tok, name="scripted", max_batch_size=8)
    yield eng
    eng.close()


def _parts(engine: Engine) -> tuple[Any, Any, Any, LocalBackend]:
    backend = LocalBackend(EngineHolder(engine=engine))
    sampler = BackendPolicy(backend, tokenizer=engine.tokenizer)
    rollout = MultiTurnRollout(sampler=sampler, template=engine.tokenizer, max_turns=1,
                               sampling_params=SamplingParams(max_tokens=8))
    actor = TinyActor(len(engine.tokenizer))
    sampled_with: list[int] = []

    async def sample(batch: Sequence[Any], version: int) -> list[Trajectory]:
        sampled_with.append(engine.weight_version)
        return await rollout.run(batch)

    def sync_weights(step: int) -> None:
        engine.update_weights({f"actor.{k}": v for k, v in actor.model.state_dict().items()})

    sample.sampled_with = sampled_with  # type: ignore[attr-defined]
    return sample, actor, sync_weights, backend


def _batches(n: int) -> list[list[dict[str, Any]]]:
    return [[{"id": f"s{k}-{i}", "messages": [{"role": "user", "content": f"q{k}{i}"}]} for i in range(2)]
            for k in range(n)]


def test_the_reference_keys_and_a_registered_pair() -> None:
    assert registry.get_method("verl", "hybrid") is not None
    assert registry.get_method("verl", "one_step_off") is not None
    mine = TrainRegistry()

    def my_train(trajectories: list[Trajectory], step: int) -> None:
        return None

    mine.register("my_engine", "colocate", None, my_train)
    assert mine.get_method("my_engine", "colocate") == (None, my_train)
    assert mine.get_method("my_engine", "other") is None


async def test_verl_hybrid_trains_on_fresh_samples(engine: Engine) -> None:
    rollout_method, train_method = registry.get_method("verl", "hybrid")  # type: ignore[misc]
    sample, actor, sync, backend = _parts(engine)
    report = await rollout_method(_batches(3), rollout=sample, train=functools.partial(train_method, actor=actor),
                                  sync_weights=sync, logprob_backend=backend)
    assert [s.staleness for s in report.steps] == [[0, 0], [0, 0], [0, 0]]
    assert [s.weight_versions for s in report.steps] == [[0, 0], [1, 1], [2, 2]]
    assert sample.sampled_with == [0, 1, 2] and engine.weight_version == 3
    assert len(actor.batches) == 3 and all("loss" in s.metrics for s in report.steps)
    assert actor.batches[0]["responses"].shape[0] == 2


async def test_verl_one_step_off_samples_one_version_behind(engine: Engine) -> None:
    rollout_method, train_method = registry.get_method("verl", "one_step_off")  # type: ignore[misc]
    sample, actor, sync, backend = _parts(engine)
    report = await rollout_method(_batches(4), rollout=sample, train=functools.partial(train_method, actor=actor),
                                  sync_weights=sync, max_staleness_steps=1, logprob_backend=backend)
    # Batch k+1 samples while step k trains, so it sees version k; step k+1 trains on it.
    assert sample.sampled_with == [0, 0, 1, 2]
    assert [s.staleness for s in report.steps] == [[0, 0], [1, 1], [1, 1], [1, 1]]
    assert [s.trained for s in report.steps] == [2, 2, 2, 2] and engine.weight_version == 4


async def test_max_staleness_steps_drops_stale_trajectories(engine: Engine) -> None:
    rollout_method, train_method = registry.get_method("verl", "one_step_off")  # type: ignore[misc]
    sample, actor, sync, _ = _parts(engine)
    kept: list[list[Trajectory]] = []

    async def train(trajectories: list[Trajectory], step: int) -> Any:
        kept.append(trajectories)
        return await train_method(trajectories, step, actor=actor)

    report = await rollout_method(_batches(3), rollout=sample, train=train, sync_weights=sync,
                                  max_staleness_steps=0)
    assert [(s.trained, s.dropped_stale) for s in report.steps] == [(2, 0), (0, 2), (0, 2)]
    assert [len(k) for k in kept] == [2, 0, 0] and len(actor.batches) == 1


async def test_recomputed_logprobs_come_from_get_logprobs(engine: Engine) -> None:
    rollout_method, train_method = registry.get_method("verl", "one_step_off")  # type: ignore[misc]
    sample, actor, sync, backend = _parts(engine)
    seen: list[Trajectory] = []

    async def train(trajectories: list[Trajectory], step: int) -> Any:
        seen.extend(trajectories)
        return await train_method(trajectories, step, actor=actor)

    await rollout_method(_batches(2), rollout=sample, train=train, sync_weights=sync, logprob_backend=backend)
    for traj in seen:
        assert traj.tokens is not None
        recomputed = traj.metadata["recomputed_logprobs"]
        assert len(recomputed) == len(traj.tokens.response_ids)
        direct = await backend.get_logprobs(traj.tokens.prompt_ids, traj.tokens.response_ids)
        assert [r for r in recomputed if r is not None] == [d for d, m in zip(direct, traj.tokens.loss_mask,
                                                                                   strict=True) if m]

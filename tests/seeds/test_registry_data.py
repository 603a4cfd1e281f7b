"""AgentSDK seed, "DataManagerRegistry": ``register(train_backend, service_mode, cls)`` /
``get_class`` and the built-in ``verl``/``train`` and ``verl``/``infer`` managers.

trajforge names: ``aura.data_manager.data_registry`` is ``services.rollout.data_registry``.
"""

from __future__ import annotations

import json
from pathlib import Path

from services.rollout.data_registry import DataManagerRegistry, InferDataManager, VerlDataManager, registry
from shared.schema import RewardRecord, TokenData, Trajectory


def test_registered_managers_and_a_custom_one() -> None:
    assert registry.get_class("verl", "train") is VerlDataManager
    assert registry.get_class("verl", "infer") is InferDataManager
    assert registry.get_class("verl", "serve") is None

    class MyManager:
        pass

    mine = DataManagerRegistry()
    mine.register("my_backend", "train", MyManager)
    assert mine.get_class("my_backend", "train") is MyManager


def test_verl_train_manager_pads_token_trajectories() -> None:
    manager_cls = registry.get_class("verl", "train")
    assert manager_cls is not None
    manager = manager_cls(pad_token_id=0)
    short = Trajectory(messages=[{"role": "user", "content": "a"}], tokens=TokenData(
        prompt_ids=[5, 6], response_ids=[7, 8, 9], loss_mask=[1, 0, 1], logprobs=[-0.5, None, -0.25]),
        rewards=[RewardRecord(component="x", score=2.0)])
    long = Trajectory(messages=[{"role": "user", "content": "b"}], tokens=TokenData(
        prompt_ids=[1, 2, 3], response_ids=[4], loss_mask=[1], logprobs=[-1.0]))
    batch = manager.to_tensors([short, long])
    assert batch["prompts"].tolist() == [[0, 5, 6], [1, 2, 3]]  # left-padded
    assert batch["responses"].tolist() == [[7, 8, 9], [4, 0, 0]]  # right-padded
    assert batch["response_mask"].tolist() == [[1, 0, 1], [1, 0, 0]]
    assert batch["attention_mask"].tolist() == [[0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
    assert batch["position_ids"].tolist()[0][:3] == [0, 0, 1]
    assert batch["old_log_probs"].tolist() == [[-0.5, 0.0, -0.25], [-1.0, 0.0, 0.0]]
    assert batch["token_level_scores"].tolist() == [[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]


def test_verl_infer_manager_reads_tasks_in_batches(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    rows = [{"task_id": f"t{i}", "sample_id": i, "iteration": 0, "agent_name": "my_agent", "problem": f"q{i}"}
            for i in range(5)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    manager_cls = registry.get_class("verl", "infer")
    assert manager_cls is not None
    manager = manager_cls(path)
    batches = list(manager.batches(2))
    assert [[t.task_id for t in b] for b in batches] == [["t0", "t1"], ["t2", "t3"], ["t4"]]
    assert batches[0][0].messages == [{"role": "user", "content": "q0"}] and len(manager.errors) == 1

"""Run inside the trainer-peers virtualenv (scripts/trainer_peers_venv.sh): TRL's and verl's own code on our export.

Usage: python trainer_peers_check.py EXPORT.parquet COLUMNS_PY OUT.json

It loads the export with ``datasets``, maps it with our ``columns.py`` (loaded from its file: this
environment does not have the project installed), and then runs, on a tiny random Llama:

- verl: ``DataProto.from_dict`` on the verl batch (its consistency checks), ``chunk``/``concat``,
  ``compute_grpo_outcome_advantage`` from the batch's ``token_level_scores`` and ``uid``, and
  ``agg_loss`` over ``response_mask``;
- TRL SFT: a real ``SFTTrainer`` prepares the export's ``input_ids`` + ``completion_mask`` (its own
  label building), collates with its own collator and trains one step;
- TRL GRPO: a real ``GRPOTrainer``'s ``_compute_loss`` on the GRPO batch (prompt/completion ids and
  masks, ``old_per_token_logps``, ``advantages``).

Writes what it measured to OUT.json for the test to check.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from typing import Any

import datasets
import numpy as np
import torch


def _columns_module(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("trajforge_columns", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tiny_model(vocab: int) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return LlamaForCausalLM(config)


def _tiny_tokenizer(vocab: int) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {"<pad>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, vocab)}}
    tok = Tokenizer(models.WordLevel(vocab=words, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>")


def check_verl(rows: dict[str, Any], columns: Any) -> dict[str, Any]:
    from verl import DataProto
    from verl.trainer.ppo.core_algos import agg_loss, compute_grpo_outcome_advantage

    mapped = columns.verl_batch(rows)
    uid = np.array(mapped.pop("uid"), dtype=object)
    data = DataProto.from_dict(tensors=mapped, non_tensors={"uid": uid})
    data.check_consistency()
    halves = DataProto.concat(data.chunk(2))
    assert torch.equal(halves.batch["input_ids"], data.batch["input_ids"])
    adv, _ = compute_grpo_outcome_advantage(token_level_rewards=data.batch["token_level_scores"],
                                            response_mask=data.batch["response_mask"],
                                            index=data.non_tensor_batch["uid"])
    ratio = torch.exp(data.batch["old_log_probs"] - data.batch["old_log_probs"])  # on-policy: ratio 1
    loss = agg_loss(loss_mat=-ratio * data.batch["advantages"], loss_mask=data.batch["response_mask"],
                    loss_agg_mode="token-mean")
    responses = data.batch["responses"].shape[1]
    return {"rows": len(data), "keys": sorted(data.batch.keys()),
            "sequence_scores": data.batch["token_level_scores"].sum(-1).tolist(),
            "grpo_advantage": [float(a[m.bool()][0]) if m.any() else 0.0
                               for a, m in zip(adv, data.batch["response_mask"], strict=True)],
            "attention_tail_covers_response_mask": bool(
                (data.batch["attention_mask"][:, -responses:] >= data.batch["response_mask"]).all()),
            "token_mean_loss": float(loss)}


def check_trl_sft(ds: datasets.Dataset, vocab: int) -> dict[str, Any]:
    from trl import SFTConfig, SFTTrainer

    def to_sft(row: dict[str, Any]) -> dict[str, Any]:
        return {"input_ids": row["prompt_ids"] + row["response_ids"],
                "completion_mask": [0] * len(row["prompt_ids"]) + list(row["response_mask"])}

    sft = ds.map(to_sft, remove_columns=ds.column_names)
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(output_dir=out, completion_only_loss=True, max_length=None, max_steps=1,
                         per_device_train_batch_size=len(sft), report_to=[], use_cpu=True, save_strategy="no",
                         logging_steps=1, dataloader_num_workers=0)
        trainer = SFTTrainer(model=_tiny_model(vocab), args=args, train_dataset=sft,
                             processing_class=_tiny_tokenizer(vocab))
        labels = [row["labels"] for row in trainer.train_dataset]
        batch = next(iter(trainer.get_train_dataloader()))
        result = trainer.train()
    return {"labels": labels, "collated_keys": sorted(batch.keys()), "collated_shape": list(batch["input_ids"].shape),
            "train_loss": float(result.training_loss), "steps": int(result.global_step)}


def check_trl_grpo(rows: dict[str, Any], columns: Any, vocab: int) -> dict[str, Any]:
    from trl import GRPOConfig, GRPOTrainer

    def reward(completions: list[Any], **_: Any) -> list[float]:
        return [0.0 for _ in completions]

    prompts = datasets.Dataset.from_dict({"prompt": ["w3 w4", "w5 w6"]})
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(output_dir=out, report_to=[], use_cpu=True, per_device_train_batch_size=2,
                          num_generations=2, max_completion_length=8, save_strategy="no")
        model = _tiny_model(vocab)
        trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=prompts,
                              processing_class=_tiny_tokenizer(vocab))
        batch = columns.trl_batch(rows)
        # What TRL's own batch building adds beside the export's columns: the loss normaliser; and what
        # its train loop sets before each step (one accumulation step here).
        batch["num_items_in_batch"] = batch["completion_mask"].sum()
        trainer.current_gradient_accumulation_steps = 1
        loss = trainer._compute_loss(trainer.model, batch)
        loss.backward()
        grads = sum(float(p.grad.abs().sum()) for p in trainer.model.parameters() if p.grad is not None)
    return {"loss": float(loss), "grad_abs_sum": grads, "keys": sorted(batch.keys()),
            "loss_type": str(args.loss_type)}


def main() -> None:
    export, columns_py, out = sys.argv[1:4]
    ds = datasets.Dataset.from_parquet(export)
    rows = ds[:]
    columns = _columns_module(columns_py)
    vocab = 1 + max(max(r) for r in [*rows["prompt_ids"], *rows["response_ids"]] if r)
    report = {"num_rows": ds.num_rows, "column_names": ds.column_names, "verl": check_verl(rows, columns),
              "trl_sft": check_trl_sft(ds, vocab), "trl_grpo": check_trl_grpo(rows, columns, vocab)}
    with open(out, "w") as fh:
        json.dump(report, fh)


if __name__ == "__main__":
    main()

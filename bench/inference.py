"""Local engine throughput: tokens/s at batch 1 vs N concurrent requests, plus load times.

Prints, in one run and side by side:
- model load: first load (GGUF dequantised and converted, into a fresh cache) vs cached load;
- generation: HF ``model.generate`` at batch 1 (baseline), our engine at batch 1,
  and our engine with N concurrent requests batched together; ratios and absolutes.

Run: ``PYTHONPATH=. python bench/inference.py [--max-tokens 32] [--concurrency 8]``
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from bench import headline
from services.inference.chat import render_chat
from services.inference.config import engine_config
from services.inference.engine import Engine
from services.inference.loader import LoadedModel, load_model, resolve_source
from services.inference.params import GenParams
from shared.schema import Message

PROMPTS = ["Tell me about the sea.", "Explain rain to a child.", "List three fruits.", "What is a prime?",
           "Describe a cat.", "Why is the sky blue?", "Give a tip for sleep.", "Name a famous bridge."]


def _load_times(skip_convert: bool) -> tuple[float | None, LoadedModel]:
    first = None
    if not skip_convert:
        with tempfile.TemporaryDirectory() as fresh:
            first = load_model(resolve_source(""), cache_dir=Path(fresh)).load_s
    cached = load_model(resolve_source(""), cache_dir=engine_config().cache_dir)
    return first, cached


def _hf_generate_tps(loaded: LoadedModel, prompts: list[list[int]], max_tokens: int) -> float:
    produced, started = 0, time.perf_counter()
    for ids in prompts:
        out = loaded.model.generate(torch.tensor([ids]), attention_mask=torch.ones((1, len(ids)), dtype=torch.long),
                                    max_new_tokens=max_tokens, min_new_tokens=max_tokens, do_sample=False,
                                    pad_token_id=loaded.tokenizer.eos_token_id)
        produced += out.shape[1] - len(ids)
    return produced / (time.perf_counter() - started)


async def _engine_tps(engine: Engine, prompts: list[list[int]], params: GenParams, concurrent: bool) -> float:
    started = time.perf_counter()
    if concurrent:
        results = await asyncio.gather(*(engine.generate(p, params) for p in prompts))
    else:
        results = [await engine.generate(p, params) for p in prompts]
    produced = sum(len(o.token_ids) for outs in results for o in outs)
    return produced / (time.perf_counter() - started)


def _row(label: str, value: float, base: float, unit: str) -> str:
    return f"{label:<44} {value:>9.2f} {unit:<6} x{value / base:>6.2f}"


async def main(args: Any) -> None:
    """Measure and print."""
    first, loaded = _load_times(args.skip_convert)
    engine = Engine(loaded.model, loaded.tokenizer, name=loaded.name, max_batch_size=args.concurrency)
    prompts = [render_chat(loaded.tokenizer, [Message(role="user", content=p)])
               for p in (PROMPTS * args.concurrency)[: args.concurrency]]
    params = GenParams(temperature=0.0, max_tokens=args.max_tokens, ignore_eos=True)
    await engine.generate(prompts[0], GenParams(max_tokens=2))  # warm-up
    hf = _hf_generate_tps(loaded, prompts, args.max_tokens)
    single = await _engine_tps(engine, prompts, params, concurrent=False)
    batched = await _engine_tps(engine, prompts, params, concurrent=True)
    engine.close()
    print(f"torch threads: {torch.get_num_threads()}, max_tokens {args.max_tokens}, {args.concurrency} requests")
    if first is not None:
        print(f"{'first load (GGUF convert + save)':<44} {first:>9.2f} s")
    print(f"{'cached load':<44} {loaded.load_s:>9.2f} s" + (f"      first/cached x{first / loaded.load_s:.1f}"
                                                           if first else ""))
    print(f"{'generation':<44} {'tokens/s':>16} {'vs HF':>7}")
    print(_row("HF generate, batch 1 (baseline)", hf, hf, "tok/s"))
    print(_row("engine, batch 1 (sequential)", single, hf, "tok/s"))
    print(_row(f"engine, {args.concurrency} concurrent (batched)", batched, hf, "tok/s"))
    steps = dict(sorted(engine.stats.batch_sizes.items()))
    print(f"batched / batch-1 engine: x{batched / single:.2f}; model steps by batch size: {steps}")
    headline("inference", f"engine, {args.concurrency} concurrent (batched)", batched, hf,
             baseline_name="HF generate, batch 1", unit="tok/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--skip-convert", action="store_true", help="do not time a fresh GGUF conversion")
    asyncio.run(main(parser.parse_args()))

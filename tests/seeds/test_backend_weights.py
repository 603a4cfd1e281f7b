"""AgentSDK seed, "InferBackendRegistry" backends ``vllm`` and ``vllm_pd``: ``update_weights`` and the
control plane against the local engine's vLLM-subset server on loopback (real HTTP, a real tiny
Llama, so new weights really change what it generates).

What this cannot verify without a GPU (named in the backends' docstrings): a real vLLM server's
``collective_rpc`` handling of a new model directory, the NCCL/IPC transfer round, in-process vLLM
and SGLang's distributed/tensor routes. The local engine refuses the transfer round with 501.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.inference.backends.local import LocalBackend
from services.inference.backends.registry import registry
from services.inference.engine import Engine
from services.inference.service import EngineHolder
from shared.backends.base import WeightTransfer
from shared.backends.openai_http import VLLMBackend, VLLMPDBackend
from shared.backends.sglang import SGLangBackend
from shared.errors import BackendUnsupported, UpstreamUnavailable
from shared.schema import SamplingParams
from tests.conftest import LoopbackServer
from tests.seeds.seed_support import inference_app, smol_tokenizer

GREEDY = SamplingParams(temperature=0.0, max_tokens=6, logprobs=True)


def tiny_llama(seed: int) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(smol_tokenizer()), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=512)
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real HF model directories with different weights."""
    out = {}
    for name, seed in (("a", 1), ("b", 2)):
        folder = tmp_path_factory.mktemp(f"ckpt-{name}")
        tiny_llama(seed).save_pretrained(folder)
        out[name] = folder
    return out


def _engine(seed: int) -> Engine:
    return Engine(tiny_llama(seed), smol_tokenizer(), name="tiny", max_batch_size=4)


@pytest.fixture
def served() -> Iterator[tuple[str, Engine]]:
    engine = _engine(1)
    try:
        with LoopbackServer(inference_app(engine)) as server:
            yield server.url, engine
    finally:
        engine.close()


async def _reference(seed: int, prompt: list[int]) -> list[int]:
    engine = _engine(seed)
    try:
        result = await LocalBackend(EngineHolder(engine=engine)).generate(prompt, GREEDY)
        return result.samples[0].token_ids
    finally:
        engine.close()


async def test_vllm_update_weights_from_a_directory(served: tuple[str, Engine], checkpoints: dict[str, Path]) -> None:
    url, engine = served
    prompt = smol_tokenizer().encode("Hello there")
    backend = registry.create("vllm", base_url=url, model="tiny")
    assert isinstance(backend, VLLMBackend)
    before = (await backend.generate(prompt, GREEDY)).samples[0].token_ids
    assert before == await _reference(1, prompt)
    await backend.update_weights(str(checkpoints["b"]))
    after = (await backend.generate(prompt, GREEDY)).samples[0].token_ids
    assert after == await _reference(2, prompt) and after != before
    assert engine.weight_version == 1 and not engine.paused  # resumed after the reload
    await backend.aclose()


async def test_vllm_sleep_wake_up_and_pause_modes(served: tuple[str, Engine]) -> None:
    url, engine = served
    prompt = smol_tokenizer().encode("Hi")
    backend = VLLMBackend(url, model="tiny")
    await backend.sleep(level=1)
    assert await backend.is_sleeping()
    with pytest.raises(UpstreamUnavailable):
        await backend.generate(prompt, GREEDY)
    await backend.wake_up(tags=["weights", "kv_cache"])
    assert not await backend.is_sleeping()
    await backend.pause(mode="abort")
    assert engine.paused
    await backend.resume()
    assert (await backend.generate(prompt, GREEDY)).samples[0].token_ids
    await backend.aclose()


async def test_vllm_transfer_round_is_refused_by_a_server_without_one(served: tuple[str, Engine]) -> None:
    url, engine = served
    backend = VLLMBackend(url, model="tiny")
    round_ = WeightTransfer(init_info={"master_address": "127.0.0.1", "master_port": 29500, "rank_offset": 1,
                                       "world_size": 2},
                            update_info={"names": ["w"], "dtype_names": ["bfloat16"], "shapes": [[1]]})
    with pytest.raises(BackendUnsupported, match="weight-transfer"):
        await backend.update_weights(round_)
    assert not engine.paused  # the failed round still resumed the server
    await backend.aclose()


async def test_vllm_pd_updates_prefill_and_decode(checkpoints: dict[str, Path]) -> None:
    prefill, decode = _engine(1), _engine(1)
    prompt = smol_tokenizer().encode("Hello there")
    try:
        with LoopbackServer(inference_app(prefill)) as p, LoopbackServer(inference_app(decode)) as d:
            backend = registry.create("vllm_pd", prefill_url=p.url, decode_url=d.url, model="tiny")
            assert isinstance(backend, VLLMPDBackend)
            await backend.update_weights(str(checkpoints["b"]))
            assert (prefill.weight_version, decode.weight_version) == (1, 1)
            assert (await backend.generate(prompt, GREEDY)).samples[0].token_ids == await _reference(2, prompt)
            await backend.aclose()
    finally:
        prefill.close()
        decode.close()


async def test_sglang_update_weights_from_disk(served: tuple[str, Engine], checkpoints: dict[str, Path]) -> None:
    url, engine = served
    prompt = smol_tokenizer().encode("Hello there")
    backend = SGLangBackend(url, model="tiny")
    await backend.update_weights(str(checkpoints["b"]))
    assert engine.weight_version == 1
    assert (await backend.generate(prompt, GREEDY)).samples[0].token_ids == await _reference(2, prompt)
    await backend.aclose()

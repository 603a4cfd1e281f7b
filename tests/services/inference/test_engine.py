"""The engine against the real model: ids, logprobs, seeds, stops, n, batching, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from services.inference.chat import render_chat
from services.inference.engine import Engine
from services.inference.errors import ContextTooLong, EnginePaused
from services.inference.params import GenParams
from shared.errors import InvalidInput
from shared.schema import Message


def _prompt(local_engine: Engine, text: str = "Count from one to ten.") -> list[int]:
    return render_chat(local_engine.tokenizer, [Message(role="user", content=text)])


async def test_token_ids_decode_to_text_and_logprobs_align(local_engine: Engine) -> None:
    params = GenParams(temperature=0.0, max_tokens=8, logprobs=True, top_logprobs=3)
    [out] = await local_engine.generate(_prompt(local_engine), params)
    assert out.text == local_engine.decode(out.token_ids)
    assert len(out.logprobs) == len(out.token_ids) == len(out.top_logprobs)
    assert all(lp <= 0.0 for lp in out.logprobs)
    for token, lp, top in zip(out.token_ids, out.logprobs, out.top_logprobs, strict=True):
        assert len(top) == 3 and top[0].token_id == token  # greedy picks the most likely token
        assert top[0].logprob == pytest.approx(lp)


async def test_same_seed_same_tokens_other_seed_differs(local_engine: Engine) -> None:
    prompt = _prompt(local_engine, "Write a word.")
    runs = [await local_engine.generate(prompt, GenParams(temperature=1.0, max_tokens=8, seed=s)) for s in (7, 7, 8)]
    assert runs[0][0].token_ids == runs[1][0].token_ids
    assert runs[0][0].token_ids != runs[2][0].token_ids


async def test_stop_string_cuts_text_and_reports_it(local_engine: Engine) -> None:
    prompt = _prompt(local_engine)
    [free] = await local_engine.generate(prompt, GenParams(temperature=0.0, max_tokens=12))
    stop = free.text[3:5]  # a string the greedy text is known to contain
    [out] = await local_engine.generate(prompt, GenParams(temperature=0.0, max_tokens=12, stop=[stop]))
    assert out.finish_reason == "stop" and out.stop_reason == stop
    assert out.text == free.text[: free.text.find(stop)]
    assert out.token_ids == free.token_ids[: len(out.token_ids)]


async def test_stop_token_id_and_length(local_engine: Engine) -> None:
    prompt = _prompt(local_engine)
    [free] = await local_engine.generate(prompt, GenParams(temperature=0.0, max_tokens=6))
    assert free.finish_reason == "length" and len(free.token_ids) == 6
    [out] = await local_engine.generate(prompt, GenParams(temperature=0.0, max_tokens=6, stop_token_ids=[free.token_ids[2]]))
    assert out.token_ids == free.token_ids[:3] and out.stop_reason == free.token_ids[2]


async def test_n_rows_are_distinct_samples(local_engine: Engine) -> None:
    outs = await local_engine.generate(_prompt(local_engine), GenParams(temperature=1.0, max_tokens=6, n=3, seed=1))
    assert [o.index for o in outs] == [0, 1, 2]
    assert len({tuple(o.token_ids) for o in outs}) > 1


async def test_concurrent_requests_share_a_batch_and_match_batch_one(local_engine: Engine) -> None:
    prompt = _prompt(local_engine)
    params = GenParams(temperature=0.0, max_tokens=6)
    [alone] = await local_engine.generate(prompt, params)
    before = local_engine.stats.max_batch
    short = _prompt(local_engine, "Hi")  # a different length exercises left padding
    results = await asyncio.gather(*(local_engine.generate(p, params) for p in [prompt, short, prompt, short]))
    assert local_engine.stats.max_batch > 1 and local_engine.stats.max_batch >= before
    assert results[0][0].token_ids == alone.token_ids == results[2][0].token_ids


async def test_cancelled_request_leaves_the_batch(local_engine: Engine) -> None:
    prompt = _prompt(local_engine)
    stream = local_engine.stream(prompt, GenParams(temperature=0.0, max_tokens=200, ignore_eos=True))
    first = await anext(stream)
    await stream.aclose()  # what a client disconnect does
    steps_before = local_engine.stats.steps
    [out] = await local_engine.generate(prompt, GenParams(temperature=0.0, max_tokens=2))
    assert first.token_ids and len(out.token_ids) == 2
    assert local_engine.stats.steps - steps_before < 100  # the 200-token row did not run to the end


async def test_bad_prompts_are_refused(local_engine: Engine) -> None:
    with pytest.raises(InvalidInput):
        await local_engine.generate([], GenParams())
    with pytest.raises(InvalidInput):
        await local_engine.generate([10**9], GenParams())
    with pytest.raises(ContextTooLong):
        await local_engine.generate([1] * 10, GenParams(max_tokens=local_engine.max_context))


async def test_paused_engine_refuses_new_work(local_engine: Engine) -> None:
    local_engine.pause()
    try:
        with pytest.raises(EnginePaused):
            await local_engine.generate(_prompt(local_engine), GenParams(max_tokens=2))
    finally:
        local_engine.resume()
    [out] = await local_engine.generate(_prompt(local_engine), GenParams(temperature=0.0, max_tokens=2))
    assert len(out.token_ids) == 2


async def test_late_requests_join_a_running_batch_and_match_batch_one(local_engine: Engine) -> None:
    long_params = GenParams(temperature=0.0, max_tokens=24, ignore_eos=True)
    short_params = GenParams(temperature=0.0, max_tokens=5)
    late_prompt = _prompt(local_engine, "Hi")
    [alone] = await local_engine.generate(late_prompt, short_params)
    waves_before = local_engine.stats.waves
    stream = local_engine.stream(_prompt(local_engine), long_params)
    await anext(stream)  # the long row is decoding now
    late = await asyncio.gather(*(local_engine.generate(late_prompt, short_params) for _ in range(2)))
    rest = [d async for d in stream]
    assert rest[-1].finished and late[0][0].token_ids == alone.token_ids == late[1][0].token_ids
    assert local_engine.stats.waves == waves_before + 1  # the late rows ran inside the long row's wave

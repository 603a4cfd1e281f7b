"""The local engine: token ids in, token ids and logprobs out, batched across callers.

Callers on the event loop submit requests; one generation thread takes every
waiting row (up to ``max_batch_size``) and decodes them together with a shared
KV cache. Rows that arrive while a batch runs join it between two steps
(continuous batching); a wave ends when its last row finishes.
Each request gets its deltas on its own asyncio queue; cancelling the caller's
task marks its rows cancelled and the next step drops them from the batch.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from services.inference.batch import run_wave
from services.inference.errors import ContextTooLong, EnginePaused, GenerationAborted
from services.inference.params import CompletionOutput, GenParams, SeqDelta
from services.inference.sampling import pick_token
from services.inference.sequence import Sequence
from shared.errors import InvalidInput

__all__ = ["Engine", "EngineStats", "PromptScores"]

_log = logging.getLogger(__name__)


@dataclass
class EngineStats:
    """Counters the tests and the benchmark read: waves, model steps by batch size, tokens."""

    waves: int = 0
    steps: int = 0
    tokens: int = 0
    batch_sizes: Counter[int] = field(default_factory=Counter)
    #: Tokens scored by prompt-logprobs passes (``score_prompt``).
    scored_tokens: int = 0

    @property
    def max_batch(self) -> int:
        """Most rows decoded together in one model step so far."""
        return max(self.batch_sizes, default=0)


@dataclass
class PromptScores:
    """One scoring pass: each token's logprob and rank given the ones before it (``None`` for the first),
    and the token sampled after the prompt when one was asked for."""

    logprobs: list[float | None]
    ranks: list[int | None]
    sampled: CompletionOutput | None = None


class Engine:
    """Batched generation over a loaded HF causal LM on CPU."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str, max_batch_size: int = 8,
                 torch_threads: int = 0) -> None:
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.max_batch_size = max_batch_size
        self.max_context = int(getattr(model.config, "max_position_embeddings", 2048))
        self.stats = EngineStats()
        self.weight_version = 0
        self.sleep_level = 0  # vLLM's sleep mode: >0 while asleep (generation refused until wake_up)
        self.weights_path: str | None = None  # where reload_weights reads from (set by update_config)
        self._torch_threads = torch_threads
        self._queue: queue.Queue[Sequence | None] = queue.Queue()
        self._lock = threading.Lock()  # held while a wave runs; weight updates wait for it
        self._resumed = threading.Event()  # cleared while paused
        self._resumed.set()
        self._thread: threading.Thread | None = None
        self._eos = self._eos_ids()

    def _eos_ids(self) -> frozenset[int]:
        ids = {self.tokenizer.eos_token_id}
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update(configured if isinstance(configured, list) else [configured])
        return frozenset(int(i) for i in ids if i is not None)

    @property
    def pad_id(self) -> int:
        """Token used for left padding (masked out, never attended to)."""
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else next(iter(self._eos)))

    def start(self) -> None:
        """Start the generation thread (idempotent)."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="trajforge-engine", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the generation thread after the current wave; queued rows are aborted."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._resumed.set()  # a paused thread must wake up to see the stop signal
            self._thread.join(timeout=60)
        self._thread = None
        self._abort_queued()

    def _abort_queued(self) -> None:
        while True:
            try:
                row = self._queue.get_nowait()
            except queue.Empty:
                return
            if row is not None:
                row.abort()  # its caller gets a finished delta instead of waiting forever

    def pause(self) -> None:
        """Stop starting new waves; running rows finish, new rows wait."""
        self._resumed.clear()

    def resume(self) -> None:
        """Start waves again after ``pause``."""
        self._resumed.set()

    @property
    def paused(self) -> bool:
        """True while paused."""
        return not self._resumed.is_set()

    def abort_waiting(self) -> None:
        """Abort every queued row (vLLM's ``pause?mode=abort``); running rows finish their wave."""
        self._abort_queued()

    def sleep(self, level: int = 1) -> None:
        """vLLM's sleep mode as this CPU engine can honour it: no generation until ``wake_up``.

        Nothing is offloaded (the weights stay in host memory); the level is reported back.
        """
        self.pause()
        self.sleep_level = level

    def wake_up(self) -> None:
        """Leave sleep mode and take work again."""
        self.sleep_level = 0
        self.resume()

    def update_weights(self, state_dict: dict[str, Any]) -> int:
        """Load new weights between waves; returns the new weight version."""
        with self._lock:
            self.model.load_state_dict(state_dict, strict=False)
            self.weight_version += 1
        return self.weight_version

    def validate(self, prompt_ids: list[int], params: GenParams) -> None:
        """Refuse prompts the model cannot take (empty, bad ids, too long)."""
        if not prompt_ids:
            raise InvalidInput("The prompt is empty.", param="prompt")
        vocab = int(self.model.config.vocab_size)
        if any(not 0 <= t < vocab for t in prompt_ids):
            raise InvalidInput(f"Prompt token ids must be in [0, {vocab}).", param="prompt")
        if len(prompt_ids) + params.max_tokens > self.max_context:
            raise ContextTooLong(
                f"The prompt ({len(prompt_ids)} tokens) plus max_tokens ({params.max_tokens}) exceeds the "
                f"context window of {self.max_context} tokens.", param="max_tokens")

    async def score(self, token_ids: list[int]) -> list[float | None]:
        """Logprob of each token given the ones before it (the first has none), between waves."""
        return (await self.score_prompt(token_ids)).logprobs

    async def score_prompt(self, token_ids: list[int], params: GenParams | None = None) -> PromptScores:
        """Prompt logprobs and ranks in one forward pass; with ``params`` (one row, ``max_tokens`` 1)
        the next token is sampled from the same pass, so scoring never costs a second prefill."""
        if params is not None and (params.max_tokens != 1 or params.n != 1):
            raise InvalidInput("One-pass scoring samples one token of one row.", param="max_tokens")
        self.validate(token_ids, params or GenParams(max_tokens=1))
        return await asyncio.to_thread(self._score, token_ids, params)

    def _score(self, token_ids: list[int], params: GenParams | None) -> PromptScores:
        import torch

        with self._lock, torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([token_ids]), use_cache=False).logits[0].float()
            logprobs = torch.log_softmax(logits[:-1], dim=-1)
            picked = logprobs.gather(1, torch.tensor(token_ids[1:]).unsqueeze(1))
            ranks = (logprobs > picked).sum(dim=1) + 1  # vLLM's rank: 1 for the most likely token
            sampled = None
            if params is not None:
                row = Sequence(index=0, prompt_ids=list(token_ids), params=params, eos_ids=self._eos,
                               decode=self.decode, sink=lambda _: None, generator=_generator(params.seed, 0))
                row.append(*pick_token(logits[-1], params, row.generator))
                sampled = row.output()
        self.stats.scored_tokens += len(token_ids)
        return PromptScores(logprobs=[None, *(float(v) for v in picked.squeeze(1))],
                            ranks=[None, *(int(r) for r in ranks)], sampled=sampled)

    def check(self, prompt_ids: list[int], params: GenParams) -> None:
        """``validate``, and refuse new work while paused."""
        self.validate(prompt_ids, params)
        if self.paused:
            raise EnginePaused("The engine is paused for a weight update; retry shortly.", retry_after_s=1.0)

    def encode(self, text: str) -> list[int]:
        """Token ids of a text prompt (with the tokenizer's special tokens, if any)."""
        return [int(i) for i in self.tokenizer(text, add_special_tokens=True)["input_ids"]]

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """Text of token ids."""
        return str(self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens))

    async def stream(self, prompt_ids: list[int], params: GenParams) -> AsyncIterator[SeqDelta]:
        """Submit a request and yield its deltas as they are sampled (rows interleaved)."""
        self.check(prompt_ids, params)
        self.start()
        deltas: asyncio.Queue[SeqDelta] = asyncio.Queue()
        rows = self._make_rows(prompt_ids, params, asyncio.get_running_loop(), deltas)
        for row in rows:
            self._queue.put(row)
        try:
            async for delta in self._drain(deltas, len(rows)):
                yield delta
        finally:
            for row in rows:
                row.cancelled = True  # no-op when finished; frees the slot otherwise

    async def _drain(self, deltas: asyncio.Queue[SeqDelta], count: int) -> AsyncIterator[SeqDelta]:
        open_rows = count
        while open_rows:
            delta = await deltas.get()
            open_rows -= int(delta.finished)
            yield delta

    async def generate(self, prompt_ids: list[int], params: GenParams) -> list[CompletionOutput]:
        """Run a request to completion; one output per ``n``, in index order.

        Raises ``GenerationAborted`` when the engine gave up on a row (model failure, shutdown).
        """
        outputs: dict[int, CompletionOutput] = {}
        acc: dict[int, list[SeqDelta]] = {i: [] for i in range(params.n)}
        async for delta in self.stream(prompt_ids, params):
            acc[delta.index].append(delta)
            if delta.finished and delta.finish_reason == "abort":
                raise GenerationAborted("The engine aborted this request (model failure or shutdown); retry it.")
            if delta.finished:
                outputs[delta.index] = _collect(acc[delta.index])
        return [outputs[i] for i in range(params.n)]

    def _make_rows(self, prompt_ids: list[int], params: GenParams, loop: asyncio.AbstractEventLoop,
                   deltas: asyncio.Queue[SeqDelta]) -> list[Sequence]:
        def sink(delta: SeqDelta) -> None:
            """Hand a delta from the generation thread to the caller's loop."""
            loop.call_soon_threadsafe(deltas.put_nowait, delta)

        return [
            Sequence(index=i, prompt_ids=list(prompt_ids), params=params, eos_ids=self._eos,
                     decode=self.decode, sink=sink, generator=_generator(params.seed, i))
            for i in range(params.n)
        ]

    def _run(self) -> None:
        import torch

        if self._torch_threads:
            torch.set_num_threads(self._torch_threads)
        while True:
            first = self._queue.get()
            if first is None:
                return
            self._resumed.wait()
            rows = self._take_wave(first)
            with self._lock:
                self._run_wave(rows)

    def _take_wave(self, first: Sequence) -> list[Sequence]:
        return [row for row in [first, *self._admit(self.max_batch_size - 1)] if not _drop_cancelled(row)]

    def _admit(self, room: int) -> list[Sequence]:
        """Up to ``room`` queued rows, without waiting (none while paused)."""
        rows: list[Sequence] = []
        while len(rows) < room and not self.paused:
            try:
                row = self._queue.get_nowait()
            except queue.Empty:
                break
            if row is None:
                self._queue.put(None)  # keep the shutdown signal for the main loop
                break
            if not _drop_cancelled(row):
                rows.append(row)
        return rows

    def _on_step(self, batch_size: int) -> None:
        self.stats.steps += 1
        self.stats.tokens += batch_size
        self.stats.batch_sizes[batch_size] += 1

    def _run_wave(self, rows: list[Sequence]) -> None:
        if not rows:
            return
        self.stats.waves += 1
        wave = list(rows)

        def admit(room: int) -> list[Sequence]:
            """Admit queued rows and remember them, so a failure can abort them too."""
            joined = self._admit(room)
            wave.extend(joined)
            return joined

        try:
            run_wave(self.model, rows, pad_id=self.pad_id, max_rows=self.max_batch_size, admit=admit,
                     on_step=self._on_step)
        except Exception:  # noqa: BLE001 - a model failure must not strand callers or kill the thread
            _log.exception("generation wave failed; its rows are aborted")
            for row in wave:
                row.abort()


def _drop_cancelled(row: Sequence) -> bool:
    if row.cancelled:
        row.abort()
    return row.cancelled


def _generator(seed: int | None, index: int) -> Any:
    import torch

    generator = torch.Generator()
    if seed is None:
        generator.seed()
    else:
        # Row i of a seeded request is reproducible on its own, whatever it is batched with.
        generator.manual_seed(seed * 1_000_003 + index)
    return generator


def _collect(deltas: list[SeqDelta]) -> CompletionOutput:
    last = deltas[-1]
    return CompletionOutput(
        index=last.index,
        token_ids=[t for d in deltas for t in d.token_ids],
        text=last.text,
        logprobs=[lp for d in deltas for lp in d.logprobs],
        top_logprobs=[tops for d in deltas for tops in d.top_logprobs],
        finish_reason=last.finish_reason or "abort",
        stop_reason=last.stop_reason,
    )

"""One output row in flight: its tokens, stop checks, and the deltas it reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.inference.params import CompletionOutput, FinishReason, GenParams, SeqDelta, TopLogprob

__all__ = ["Sequence"]


@dataclass
class Sequence:
    """A single sampled continuation of a prompt (request ``n`` makes ``n`` of these)."""

    index: int
    prompt_ids: list[int]
    params: GenParams
    eos_ids: frozenset[int]
    decode: Callable[[list[int]], str]
    sink: Callable[[SeqDelta], None]
    generator: Any = None
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[list[TopLogprob]] = field(default_factory=list)
    text: str = ""
    finish_reason: FinishReason | None = None
    stop_reason: str | int | None = None
    cancelled: bool = False

    @property
    def finished(self) -> bool:
        """True once a stop condition fired or the row was cancelled."""
        return self.finish_reason is not None

    def append(self, token: int, logprob: float, top: list[TopLogprob]) -> None:
        """Add one sampled token, apply stop rules, and report the delta."""
        self.token_ids.append(token)
        self.logprobs.append(logprob)
        self.top_logprobs.append(top)
        self.text = self.decode(self.token_ids)
        self._check_stop(token)
        self.sink(self._delta(token, logprob, top))

    def abort(self) -> None:
        """Finish the row early (cancelled by its caller or the engine shut down)."""
        if not self.finished:
            self.finish_reason = "abort"
            self.sink(SeqDelta(index=self.index, token_ids=[], logprobs=[], top_logprobs=[], text=self.text,
                               finished=True, finish_reason="abort"))

    def _check_stop(self, token: int) -> None:
        if token in self.params.stop_token_ids:
            self.finish_reason, self.stop_reason = "stop", token
        elif (token in self.eos_ids and not self.params.ignore_eos) or self._cut_at_stop_string():
            self.finish_reason = "stop"
        elif len(self.token_ids) >= self.params.max_tokens:
            self.finish_reason = "length"

    def _cut_at_stop_string(self) -> bool:
        hits = [(self.text.find(s), s) for s in self.params.stop if s and s in self.text]
        if not hits:
            return False
        position, stop = min(hits)
        # The stop string is not part of the text; its tokens stay in token_ids (as in vLLM).
        self.text, self.stop_reason = self.text[:position], stop
        return True

    def _safe_text(self) -> str:
        text = self.text.rstrip("\ufffd")  # an incomplete multi-byte character
        for stop in self.params.stop:
            for size in range(min(len(stop) - 1, len(text)), 0, -1):
                if text.endswith(stop[:size]):
                    return text[:-size]  # may yet become a stop string: hold it back
        return text

    def _delta(self, token: int, logprob: float, top: list[TopLogprob]) -> SeqDelta:
        return SeqDelta(
            index=self.index, token_ids=[token], logprobs=[logprob], top_logprobs=[top],
            text=self.text if self.finished else self._safe_text(),
            finished=self.finished, finish_reason=self.finish_reason, stop_reason=self.stop_reason,
        )

    def output(self) -> CompletionOutput:
        """The finished row as the engine returns it."""
        return CompletionOutput(
            index=self.index, token_ids=self.token_ids, text=self.text, logprobs=self.logprobs,
            top_logprobs=self.top_logprobs, finish_reason=self.finish_reason or "abort",
            stop_reason=self.stop_reason,
        )

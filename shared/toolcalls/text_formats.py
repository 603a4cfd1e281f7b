"""Agent-framework call formats written as plain text: Cline XML, VCP blocks, ReAct ``Action:`` lines.

These are not model chat templates but conventions of agent frameworks whose
transcripts reach the cleaning service. Cline XML and ReAct look like ordinary
prose or markup (``<config><name>app</name></config>``, an "Action:" line in
an explanation), so both only count for tool names the caller declares.
"""

from __future__ import annotations

import re
from typing import Any

from shared.toolcalls.models import CallStatus, Extraction, ParsedCall
from shared.toolcalls.qwen_xml import convert_value

__all__ = ["VCP_CLOSE", "VCP_OPEN", "parse_cline_xml", "parse_react", "parse_vcp"]

Schemas = dict[str, dict[str, Any]]

VCP_OPEN = "<<<[TOOL_REQUEST]>>>"
VCP_CLOSE = "<<<[END_TOOL_REQUEST]>>>"
_VCP_FIELD = re.compile(r"([\w\-]+)\s*[:：]\s*「始(?:ESCAPE)?」(.*?)「末(?:ESCAPE)?」", re.S)
_CHILD_OPEN = re.compile(r"<([A-Za-z_][\w\-]*)>")
_REACT_LINE = re.compile(r"^[ \t]*Action:[ \t]*([\w\-./]+)\[(.*)\][ \t]*$", re.M)


def _children(body: str, props: dict[str, Any]) -> dict[str, Any]:
    """``<param>value</param>`` children, values typed by the tool's schema when it has one."""
    args: dict[str, Any] = {}
    pos = 0
    while (m := _CHILD_OPEN.search(body, pos)) is not None:
        close = body.find(f"</{m.group(1)}>", m.end())
        if close == -1:
            pos = m.end()
            continue
        args[m.group(1)] = convert_value(body[m.end():close].strip(), props.get(m.group(1)))
        pos = close + len(m.group(1)) + 3
    return args


def parse_cline_xml(text: str, schemas: Schemas) -> Extraction:
    """``<tool_name><param>value</param>...</tool_name>`` for declared tools that have parameters."""
    calls: list[ParsedCall] = []
    for name, schema in schemas.items():
        opener, closer = f"<{name}>", f"</{name}>"
        pos = text.find(opener)
        while pos != -1:
            close = text.find(closer, pos + len(opener))
            if close == -1:
                break
            end = close + len(closer)
            args = _children(text[pos + len(opener):close], schema.get("properties", {}))
            if args:  # a bare <name>...</name> is prose, not a call
                calls.append(ParsedCall(status="ok", name=name, arguments=args, raw=text[pos:end], start=pos,
                                        end=end, family="cline_xml"))
            pos = text.find(opener, end)
    calls.sort(key=lambda c: c.start)
    return Extraction(calls=_non_overlapping(calls), consumed=[])


def _non_overlapping(calls: list[ParsedCall]) -> list[ParsedCall]:
    kept: list[ParsedCall] = []
    for call in calls:
        if not kept or call.start >= kept[-1].end:
            kept.append(call)
    return kept


def parse_vcp(text: str) -> Extraction:
    """``<<<[TOOL_REQUEST]>>> tool_name:「始」f「末」 key:「始」v「末」 <<<[END_TOOL_REQUEST]>>>`` blocks."""
    calls: list[ParsedCall] = []
    pos = text.find(VCP_OPEN)
    while pos != -1:
        close = text.find(VCP_CLOSE, pos + len(VCP_OPEN))
        end = close + len(VCP_CLOSE) if close != -1 else len(text)
        body = text[pos + len(VCP_OPEN):close if close != -1 else len(text)]
        fields = {k: v.strip() for k, v in _VCP_FIELD.findall(body)}
        name = fields.pop("tool_name", "")
        if close == -1:
            calls.append(ParsedCall(status="unclosed", name=name or None, arguments=fields, raw=text[pos:end],
                                    start=pos, end=end, family="vcp", error=f"no closing {VCP_CLOSE}"))
            break
        status: CallStatus = "ok" if name else "missing_name"
        calls.append(ParsedCall(status=status, name=name or None, arguments=fields if name else None,
                                raw=text[pos:end], start=pos, end=end, family="vcp",
                                error=None if name else "block has no tool_name"))
        pos = text.find(VCP_OPEN, end)
    return Extraction(calls=calls, consumed=[])


def parse_react(text: str, schemas: Schemas) -> Extraction:
    """``Action: tool[input]`` lines naming a declared tool; the input is ``{"input": ...}``."""
    calls = [ParsedCall(status="ok", name=m.group(1), arguments={"input": m.group(2)}, raw=m.group(0),
                        start=m.start(), end=m.end(), family="react")
             for m in _REACT_LINE.finditer(text) if m.group(1) in schemas]
    return Extraction(calls=calls, consumed=[])

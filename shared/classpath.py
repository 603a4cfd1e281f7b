"""The one grammar for user classpaths: ``package.module:Attr`` or the dotted ``package.module.Attr``.

The colon form names the module exactly. The dotted form (as the DashScope
reference writes ``functions.rollout.my_rollout.MyRolloutProcessor``) leaves
the split open: the longest importable module prefix wins, the rest is the
attribute path. An allow-list of module prefixes, when given, applies to every
module that would be imported, so a dotted classpath cannot reach a module the
colon form could not.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["CLASSPATH_PATTERN", "candidates", "load_object", "module_allowed"]

_NAME = r"[A-Za-z_]\w*"
#: ``module(.sub)*(:Attr(.Attr)*)?``: the colon is optional; at least two segments without it.
CLASSPATH_PATTERN = rf"^{_NAME}(\.{_NAME})*(:{_NAME}(\.{_NAME})*|\.{_NAME})$"


def candidates(classpath: str) -> list[tuple[str, str]]:
    """Every (module, attribute path) reading of ``classpath``, most specific module first."""
    if not re.fullmatch(CLASSPATH_PATTERN, classpath):
        raise ValueError(f"classpath {classpath!r} must look like 'package.module:Class' or 'package.module.Class'")
    if ":" in classpath:
        module, _, attr = classpath.partition(":")
        return [(module, attr)]
    parts = classpath.split(".")
    return [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]


def module_allowed(module: str, prefixes: Sequence[str]) -> bool:
    """True when ``module`` is one of ``prefixes`` or inside one."""
    return any(module == p.rstrip(".") or module.startswith(p.rstrip(".") + ".") for p in prefixes if p)


def load_object(classpath: str, *, allowed_modules: Sequence[str] | None = None) -> Any:
    """Import the object ``classpath`` names; only modules under ``allowed_modules`` when given.

    Raises ``ValueError`` for a malformed or disallowed classpath, ``ImportError`` when no reading
    imports, ``AttributeError`` when the module lacks the attribute.
    """
    readings = [(m, a) for m, a in candidates(classpath)
                if allowed_modules is None or module_allowed(m, allowed_modules)]
    if not readings:
        raise ValueError(f"classpath {classpath!r} is outside the allowed modules")
    for module_name, attr_path in readings:
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Only "this reading's module does not exist" moves on; a module failing inside is an error.
            if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                continue
            raise
        for part in attr_path.split("."):
            obj = getattr(obj, part)
        return obj
    raise ImportError(f"no module of classpath {classpath!r} can be imported")

"""The one plugin loader: user code by classpath, only from allow-listed modules.

A classpath names an object in an importable module, in either of two
spellings, both accepted everywhere (rollout processors, reward processors,
in-process OpenEnv env classes):

    package.module:Class          (attribute path after the colon; may be dotted: ``Outer.Inner``)
    package.module.Class          (the last dotted part is the attribute)

The allow-list is a list of module prefixes (``mylab.rewards`` admits
``mylab.rewards`` and ``mylab.rewards.math``, never ``mylab.rewardsx``); it is
checked on the text *before* anything is imported, so a refused classpath
never runs module-level code.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any

from shared.errors import InvalidInput, TrajforgeError

__all__ = ["CLASSPATH_PATTERN", "check_allowed", "load_object", "module_allowed", "parse_classpath"]

_IDENT = r"[A-Za-z_]\w*"
_DOTTED = rf"{_IDENT}(?:\.{_IDENT})*"
#: Both spellings, for ``Field(pattern=...)`` on request bodies.
CLASSPATH_PATTERN = rf"^(?:{_DOTTED}:{_DOTTED}|{_IDENT}(?:\.{_IDENT})+)$"
_CLASSPATH = re.compile(CLASSPATH_PATTERN, re.ASCII)


def parse_classpath(classpath: str, *, error: type[TrajforgeError] = InvalidInput,
                    param: str | None = None) -> tuple[str, str]:
    """``(module, attribute path)`` of a classpath in either spelling; ``error`` when malformed."""
    if not _CLASSPATH.match(classpath):
        raise error(f"classpath {classpath!r} must look like 'package.module:Class' or 'package.module.Class'",
                    param=param)
    if ":" in classpath:
        module, _, attr = classpath.partition(":")
        return module, attr
    module, _, attr = classpath.rpartition(".")
    return module, attr


def module_allowed(module: str, prefixes: Sequence[str]) -> bool:
    """True when ``module`` is one of the prefixes or inside one (whole dotted parts only)."""
    for prefix in (p.strip().rstrip(".") for p in prefixes):
        if prefix and (module == prefix or module.startswith(prefix + ".")):
            return True
    return False


def check_allowed(classpath: str, prefixes: Sequence[str], *, what: str, setting: str,
                  error: type[TrajforgeError] = InvalidInput, param: str | None = None) -> None:
    """Refuse a classpath outside the allowed module prefixes (nothing is imported)."""
    module, _ = parse_classpath(classpath, error=error, param=param)
    if not module_allowed(module, prefixes):
        allowed = ", ".join(p for p in prefixes if p) or f"none; set {setting}"
        raise error(f"{what} {classpath!r} is not in an allowed module (allowed: {allowed})", param=param)


def load_object(classpath: str, *, allowed: Sequence[str] | None = None, what: str = "plugin",
                setting: str = "", error: type[TrajforgeError] = InvalidInput, param: str | None = None) -> Any:
    """Import the module and return the named object; checks ``allowed`` first when given."""
    if allowed is not None:
        check_allowed(classpath, allowed, what=what, setting=setting, error=error, param=param)
    module_name, attr_path = parse_classpath(classpath, error=error, param=param)
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr_path.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise error(f"cannot load {what} {classpath!r}: {exc}", param=param) from exc
    return obj

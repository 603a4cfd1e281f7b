"""The build's import check: ``python -m services.functions.inspect RESULT.json`` in the package's environment.

Imports every module of the workspace's ``functions`` package and writes
``{"classpaths": [...], "errors": [{"module", "error"}]}``: the classes defined
there that have a ``process`` method (the abstract bases excluded), and every
module that failed to import with its exception (the traceback goes to the
build log).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
import traceback
from typing import Any

__all__ = ["main"]


def _processors(module: Any) -> list[str]:
    found = []
    for name, obj in vars(module).items():
        if (inspect.isclass(obj) and obj.__module__ == module.__name__ and not inspect.isabstract(obj)
                and callable(getattr(obj, "process", None))):
            found.append(f"{module.__name__}.{name}")
    return found


def main(argv: list[str] | None = None) -> int:
    """Walk ``functions``; write what was found and what failed."""
    (result,) = (argv or sys.argv[1:])[:1]
    classpaths: list[str] = []
    errors: list[dict[str, str]] = []

    def failed(name: str) -> None:
        kind, exc, _ = sys.exc_info()
        traceback.print_exc()
        errors.append({"module": name, "error": f"{kind.__name__ if kind else 'Error'}: {exc}"})

    try:
        root = importlib.import_module("functions")
        names = [root.__name__] + [m.name for m in pkgutil.walk_packages(root.__path__, "functions.",
                                                                          onerror=failed)]
    except Exception:  # noqa: BLE001 - user code: the failure is the build's result
        failed("functions")
        names = []
    for name in names:
        try:
            classpaths.extend(_processors(importlib.import_module(name)))
        except Exception:  # noqa: BLE001 - user code: the failure is the build's result
            failed(name)
    with open(result, "w", encoding="utf-8") as out:
        json.dump({"classpaths": sorted(set(classpaths)), "errors": errors}, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

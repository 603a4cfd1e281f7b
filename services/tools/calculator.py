"""A safe arithmetic ``calculator`` tool: the expression is walked as an AST, never evaluated."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from services.tools.base import BaseTool
from services.tools.errors import ToolArgumentsInvalid

__all__ = ["CalculatorTool", "evaluate"]

Number = int | float
_MAX_CHARS = 1000
_MAX_EXPONENT = 10_000
_MAX_INT_BITS = 100_000
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": math.factorial,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _power(base: Number, exponent: Number) -> Number:
    # A huge integer power would hang the service; refuse it up front.
    if abs(exponent) > _MAX_EXPONENT:
        raise ToolArgumentsInvalid(f"exponent {exponent} is too large (limit {_MAX_EXPONENT})")
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and base.bit_length() * exponent > _MAX_INT_BITS
    ):
        raise ToolArgumentsInvalid("integer power result is too large")
    result: Number = operator.pow(base, exponent)
    return result


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS or node.keywords:
        raise ToolArgumentsInvalid(
            f"unsupported function; allowed: {', '.join(sorted(_FUNCTIONS))}"
        )
    args = [_eval(arg) for arg in node.args]
    if node.func.id == "factorial" and args and args[0] > 1000:
        raise ToolArgumentsInvalid("factorial argument is too large (limit 1000)")
    return _FUNCTIONS[node.func.id](*args)  # type: ignore[no-any-return]


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        if isinstance(node.value, bool):
            raise ToolArgumentsInvalid("booleans are not numbers here")
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))  # type: ignore[no-any-return]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        return _BINARY[type(node.op)](left, right)  # type: ignore[no-any-return]
    if isinstance(node, ast.Call):
        return _call(node)
    raise ToolArgumentsInvalid(f"unsupported syntax: {type(node).__name__}")


def evaluate(expression: str) -> Number:
    """Value of an arithmetic expression; raises ToolArgumentsInvalid for anything else."""
    if len(expression) > _MAX_CHARS:
        raise ToolArgumentsInvalid(f"expression longer than {_MAX_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
        value = _eval(tree.body)
    except (SyntaxError, RecursionError, MemoryError) as exc:
        raise ToolArgumentsInvalid(f"cannot parse expression: {type(exc).__name__}") from None
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
        raise ToolArgumentsInvalid(f"cannot evaluate expression: {exc}") from None
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        raise ToolArgumentsInvalid("result is too large")
    return value


class CalculatorTool(BaseTool):
    """The ``calculator`` tool."""

    function_name = "calculator"
    description = "Evaluate an arithmetic expression (+ - * / // % **, math functions, pi, e)."
    parameters = {
        "type": "object",
        "properties": {"expression": {"type": "string", "minLength": 1, "maxLength": _MAX_CHARS}},
        "required": ["expression"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any]) -> str:
        """The value as text."""
        return repr(evaluate(arguments["expression"]))

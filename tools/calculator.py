"""A safe calculator tool, and how a run recognises a tool that computes.

Small models get sums wrong, even of three amounts. When a run has a *computing* tool,
replan's prompts send sums, differences and comparisons of figures to it instead of the model's
head. A tool computes when its `metadata` says so (`{COMPUTES_KEY: True}`); `calculator` does,
and `computing(tool)` marks a tool of your own.

`evaluate` reads an arithmetic expression with Python's parser and walks the tree itself: only
numbers, + - * / ** , parentheses and the functions of `FUNCTIONS` (max, min, abs, round) are
allowed (no other names, calls or attributes: nothing is `eval`ed).
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

COMPUTES_KEY = "computes"
"""The `BaseTool.metadata` key that marks a tool as computing (value True)."""
MAX_EXPRESSION_CHARS = 500
"""Longest expression `evaluate` reads (deeply nested input would exhaust the parser)."""
MAX_EXPONENT = 1000
"""Largest exponent `**` takes (a huge power would take the process's memory)."""
FUNCTIONS = ("max", "min", "abs", "round")
"""The functions an expression may call, with numbers as arguments (`round(x, digits)`)."""
_ALLOWED = "numbers, + - * / **, parentheses, " + ", ".join(f"{name}()" for name in FUNCTIONS)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_OPERATORS: dict[type[ast.AST], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


class CalculationError(ValueError):
    """An expression `evaluate` cannot compute, with the reason."""


def _value(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise CalculationError(f"only {_ALLOWED} are allowed")
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_value(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculationError(f"exponents above {MAX_EXPONENT} are not supported")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        return _called(node.func.id, [_value(argument) for argument in node.args])
    raise CalculationError(f"only {_ALLOWED} are allowed")


def _called(name: str, values: list[float]) -> float:
    if name == "round" and len(values) == 1:
        return float(round(values[0]))
    if name == "round" and len(values) == 2 and values[1].is_integer():
        return float(round(values[0], int(values[1])))
    if name == "round":
        raise CalculationError("round takes a number and, optionally, whole digits")
    if name == "abs" and len(values) == 1:
        return abs(values[0])
    if name in ("max", "min") and values:
        return max(values) if name == "max" else min(values)
    if name in FUNCTIONS:
        raise CalculationError(f"{name} needs {'one number' if name == 'abs' else 'numbers'}")
    raise CalculationError(f"only {_ALLOWED} are allowed")


def evaluate(expression: str) -> float:
    """The value of an arithmetic `expression` (thousands separators like 1,200 are read);
    `CalculationError` saying why when it cannot be computed."""
    text = _THOUSANDS.sub("", expression.strip())
    if not text:
        raise CalculationError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculationError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        value = _value(ast.parse(text, mode="eval").body)
    except SyntaxError:
        raise CalculationError("it is not an arithmetic expression") from None
    except ZeroDivisionError:
        raise CalculationError("division by zero") from None
    except (OverflowError, RecursionError, MemoryError):
        raise CalculationError("the result is too large") from None
    if isinstance(value, complex):  # a negative number to a fractional power
        raise CalculationError("the result is not a real number")
    return value


def number_text(value: float) -> str:
    """`value` as the calculator writes it: up to 12 significant digits, no trailing zeros."""
    return f"{value:.12g}"


def calculate(expression: str) -> str:
    """Evaluate arithmetic with numbers, + - * / **, parentheses and max(), min(), abs(),
    round(), e.g. '(16.5 + 6.25) * 2' or 'max(64, 212, 97)'. Use it for every sum,
    difference, product, ratio or comparison of figures."""
    try:
        return f"{expression.strip()} = {number_text(evaluate(expression))}"
    except CalculationError as error:
        raise ToolException(f"Error: cannot evaluate {expression!r}: {error}") from None


def computing(tool: BaseTool) -> BaseTool:
    """`tool`, marked as computing (its metadata gets `COMPUTES_KEY`), so a run that has it
    steers arithmetic to it; returns the same tool."""
    tool.metadata = {**(tool.metadata or {}), COMPUTES_KEY: True}
    return tool


def is_computing(tool: BaseTool) -> bool:
    """Whether `tool` is marked as computing."""
    metadata: dict[str, Any] = tool.metadata or {}
    return metadata.get(COMPUTES_KEY) is True


def calculator_tool(name: str = "calculator") -> BaseTool:
    """A new calculator tool named `name`, marked as computing; a bad expression comes back
    to the model as an error message (not an exception)."""
    tool = StructuredTool.from_function(calculate, name=name, handle_tool_error=True)
    return computing(tool)


calculator = calculator_tool()
"""The calculator tool: give it to `build_plan_execute_graph(tools=[..., calculator])`."""

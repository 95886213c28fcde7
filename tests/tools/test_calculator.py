"""The calculator tool: arithmetic read safely, errors as messages for the model, and how a
tool is marked as computing."""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

from replan.tools.calculator import (
    COMPUTES_KEY,
    CalculationError,
    calculator,
    calculator_tool,
    computing,
    evaluate,
    is_computing,
)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("120.50 + 75.25 + 310.00", 505.75),
        ("21.5 - 8", 13.5),
        ("12 * 4.35", 52.2),
        ("(2 + 3) * 4", 20.0),
        ("2 ** 10", 1024.0),
        ("-3 + +5", 2.0),
        ("7 / 2", 3.5),
        ("1,200 + 5", 1205.0),  # thousands separators, as models write them
        ("max(64, 212, 97)", 212.0),  # which is largest
        ("min(3, 1.5) * 2", 3.0),
        ("abs(8.5 - 22)", 13.5),
        ("round(52.2049, 2)", 52.2),
        ("round(7.6)", 8.0),
    ],
)
def test_arithmetic_is_evaluated(expression: str, value: float) -> None:
    assert evaluate(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("__import__('os').getcwd()", "only numbers"),
        ("x + 1", "only numbers"),
        ("2 +", "not an arithmetic expression"),
        ("1 / 0", "division by zero"),
        ("9 ** 9 ** 9", "exponents above"),
        ("10.0 ** 400", "too large"),
        ("(-8) ** 0.5", "not a real number"),
        ("", "empty"),
        ("1 +" * 300 + "1", "longer than"),
        ("True + 1", "only numbers"),
        ("1, 2", "only numbers"),
        ("print(1)", "only numbers"),
        ("max(x=1)", "only numbers"),
        ("(1).real", "only numbers"),
        ("max()", "max needs numbers"),
        ("abs(1, 2)", "abs needs one number"),
        ("round(1, 2.5)", "round takes a number"),
    ],
)
def test_what_is_not_arithmetic_is_refused_with_the_reason(expression: str, reason: str) -> None:
    with pytest.raises(CalculationError, match=reason):
        evaluate(expression)


def test_the_tool_answers_with_the_expression_and_errors_go_back_as_messages() -> None:
    assert calculator.invoke({"expression": "120.50 + 75.25 + 310.00"}) == (
        "120.50 + 75.25 + 310.00 = 505.75"
    )
    assert calculator.invoke({"expression": "24.90 + 31.50 + 28.20"}).endswith("= 84.6")
    reply = calculator.invoke({"expression": "open('x')"})
    assert reply.startswith("Error: cannot evaluate") and "only numbers" in reply


def test_computing_tools_are_marked_in_their_metadata() -> None:
    @tool
    def price(item: str) -> str:
        """The price of an item."""
        return "1"

    assert is_computing(calculator) and calculator.metadata == {COMPUTES_KEY: True}
    assert calculator_tool("calc").name == "calc" and is_computing(calculator_tool("calc"))
    assert not is_computing(price)
    assert computing(price) is price and is_computing(price)

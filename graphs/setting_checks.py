"""Checks of setting values, each raising ValueError with a message that names the setting
(`Context`, the CLI's options, `build_plan_execute_graph`)."""

from __future__ import annotations

import math
from typing import Any


def check_count(name: str, value: Any, *, minimum: int, maximum: int) -> int:
    """`value` if it is a whole number in [minimum, maximum]; ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, not {value}")
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """ValueError naming `name` unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")


def check_price(name: str, value: Any, *, allow_none: bool = False) -> float | None:
    """`value` as a price if it is a finite number of 0 or more; ValueError naming `name`."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number of dollars per million tokens, not {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, not {value}")
    return float(value)


def check_prices(price_in: Any, price_out: Any) -> None:
    """ValueError unless both prices are given, each a number of 0 or more, or neither."""
    check_price("price_in", price_in, allow_none=True)
    check_price("price_out", price_out, allow_none=True)
    if (price_in is None) != (price_out is None):
        raise ValueError("price_in and price_out go together: give both")

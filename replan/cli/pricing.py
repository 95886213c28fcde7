"""What a run's tokens cost: model prices, the price a run is estimated at, and dollars as text.

Prices are dollars per million tokens (`Price`); `KNOWN_PRICES` lists some OpenAI models and is
the one source of those figures; `cost` turns a tally (`replan.state.usage`) into dollars.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from replan.graphs.context import OPENAI_HOST
from replan.state.usage import UNKNOWN, tokens_known


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens: input, cached input (read from the prompt cache), output."""

    input: float
    output: float
    cached_input: float | None = None
    """None: cached input tokens cost as much as other input tokens."""


KNOWN_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(input=0.15, cached_input=0.075, output=0.60),
    "gpt-4o": Price(input=2.50, cached_input=1.25, output=10.00),
    "gpt-4.1": Price(input=2.00, cached_input=0.50, output=8.00),
    "gpt-4.1-mini": Price(input=0.40, cached_input=0.10, output=1.60),
    "gpt-4.1-nano": Price(input=0.10, cached_input=0.025, output=0.40),
}
"""OpenAI's list prices (USD per million tokens, standard tier, as published in 2025) of some
models; a run may name its own with `--price-in` / `--price-out`."""
TOKENS_PER_PRICE_UNIT = 1_000_000


def known_price(model: str, base_url: str | None) -> Price | None:
    """The list price of `model` when it is served by OpenAI itself (no other base URL)."""
    if base_url and urlsplit(base_url).hostname != OPENAI_HOST:
        return None
    return KNOWN_PRICES.get(model)


@dataclass(frozen=True)
class Pricing:
    """The price a run's cost is estimated at, and where it comes from."""

    price: Price
    source: str


def run_pricing(settings: Mapping[str, Any] | None) -> Pricing | None:
    """The price for a run with `settings` (a `Context`'s fields): its own `price_in` and
    `price_out`, else the list price of its model on OpenAI, else None."""
    settings = settings or {}
    if settings.get("price_in") is not None and settings.get("price_out") is not None:
        price = Price(input=settings["price_in"], output=settings["price_out"])
        return Pricing(price, "price_in/price_out")
    model = str(settings.get("model") or "")
    listed = known_price(model, settings.get("base_url"))
    return None if listed is None else Pricing(listed, f"OpenAI list price of {model}")


def cost(tally: Mapping[str, Any], price: Price) -> float | None:
    """Dollars for the calls of `tally` that reported usage, or None if none did."""
    if not tokens_known(tally):
        return None
    cached = int(tally.get("cached") or 0)
    fresh = int(tally.get("input") or 0) - cached
    cached_price = price.input if price.cached_input is None else price.cached_input
    dollars = fresh * price.input + cached * cached_price
    dollars += int(tally.get("output") or 0) * price.output
    return dollars / TOKENS_PER_PRICE_UNIT


def dollars_text(dollars: float | None, tally: Mapping[str, Any]) -> str:
    """`$0.0123`, `at least $0.0123` when some calls reported no usage, or `unknown`."""
    if dollars is None:
        return UNKNOWN
    shown = f"${dollars:.4f}" if dollars < 1 else f"${dollars:,.2f}"
    return f"at least {shown}" if int(tally.get("no_usage") or 0) else shown

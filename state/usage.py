"""Tokens a run used, per node and per plan step, and what they cost: pure arithmetic.

A `Tally` sums model calls: how many were made (`calls`), how many of them came back without
the usage the server is asked to report (`no_usage`: their tokens are unknown, never guessed),
and the `input`, `cached` (the part of the input read from the server's prompt cache) and
`output` tokens of the others. `RunUsage` is what a run's state keeps: a tally per graph node
(`planner`, `replanner`, `executor`) and one per plan step, by step id as a string (the executor
calls made for it; the step's text is in the plan and the executed steps). `merge_usage` adds
two of them, which is how parallel steps' usage lands. The names are short because every
checkpoint holds the whole usage.

Prices are dollars per million tokens (`Price`); `KNOWN_PRICES` lists some OpenAI models and is
the one source of those figures; `cost` turns a tally into dollars.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import urlsplit

TALLY_FIELDS = ("calls", "no_usage", "input", "cached", "output")
TOKEN_FIELDS = ("input", "cached", "output")
UNKNOWN = "unknown"
"""What people see where tokens (or a cost) are not known."""


class Tally(TypedDict):
    """Model calls and their tokens. `input` includes the `cached` tokens; token counts cover
    only the calls that reported usage (`calls` - `no_usage` of them)."""

    calls: int
    no_usage: int
    input: int
    cached: int
    output: int


class RunUsage(TypedDict, total=False):
    """A run's usage: a tally per node, and per plan step (keys: step ids as strings)."""

    nodes: dict[str, Tally]
    steps: dict[str, Tally]


def empty_tally() -> Tally:
    """No calls."""
    return Tally(calls=0, no_usage=0, input=0, cached=0, output=0)


def call_tally(usage_metadata: Mapping[str, Any] | None) -> Tally:
    """One model call, from the `usage_metadata` of its reply (None: the server reported none)."""
    tally = empty_tally()
    tally["calls"] = 1
    if usage_metadata is None:
        tally["no_usage"] = 1
        return tally
    details = usage_metadata.get("input_token_details") or {}
    tally["input"] = int(usage_metadata.get("input_tokens") or 0)
    tally["cached"] = int(details.get("cache_read") or 0)
    tally["output"] = int(usage_metadata.get("output_tokens") or 0)
    return tally


def add_tallies(*tallies: Mapping[str, Any]) -> Tally:
    """The sum of `tallies` (fields a tally lacks count as 0)."""
    total = empty_tally()
    for tally in tallies:
        for name in TALLY_FIELDS:
            total[name] += int(tally.get(name) or 0)  # type: ignore[literal-required]
    return total


def _added(left: Mapping[str, Tally], right: Mapping[str, Tally]) -> dict[str, Tally]:
    both = dict(left)
    for key, tally in right.items():
        both[key] = add_tallies(both.get(key) or {}, tally)
    return both


def merge_usage(left: RunUsage | None, right: RunUsage | None) -> RunUsage:
    """`left` and `right` added node by node and step by step (the reducer of the state's
    `usage` channel)."""
    left, right = left or RunUsage(), right or RunUsage()
    merged = RunUsage()
    if nodes := _added(left.get("nodes") or {}, right.get("nodes") or {}):
        merged["nodes"] = nodes
    if steps := _added(left.get("steps") or {}, right.get("steps") or {}):
        merged["steps"] = steps
    return merged


def node_usage(node: str, tally: Tally) -> RunUsage:
    """`tally` as the usage of graph node `node`."""
    return RunUsage(nodes={node: tally})


def step_usage(node: str, step_id: int, tally: Tally) -> RunUsage:
    """`tally` as the usage of node `node` carrying out plan step `step_id`."""
    return RunUsage(nodes={node: tally}, steps={str(step_id): tally})


def total_tally(usage: RunUsage | None) -> Tally:
    """All the calls of `usage`."""
    return add_tallies(*((usage or {}).get("nodes") or {}).values())


def tokens_known(tally: Mapping[str, Any]) -> bool:
    """Whether some call of `tally` reported its tokens."""
    return int(tally.get("calls") or 0) > int(tally.get("no_usage") or 0)


# --- prices ----------------------------------------------------------------------------------


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
OPENAI_HOST = "api.openai.com"
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


# --- for people --------------------------------------------------------------------------------


def _calls(count: int) -> str:
    return f"{count} model call{'s' if count != 1 else ''}"


def tally_text(tally: Mapping[str, Any]) -> str:
    """`3 model calls: 1,200 in (800 cached), 90 out`, saying which tokens are unknown."""
    calls, missing = int(tally.get("calls") or 0), int(tally.get("no_usage") or 0)
    if not tokens_known(tally):
        return f"{_calls(calls)}: tokens {UNKNOWN}" if calls else _calls(0)
    cached = int(tally.get("cached") or 0)
    tokens = f"{int(tally.get('input') or 0):,} in"
    tokens += f" ({cached:,} cached)" if cached else ""
    tokens += f", {int(tally.get('output') or 0):,} out"
    if missing:
        tokens += f", plus {UNKNOWN} tokens of {_calls(missing)} without usage"
    return f"{_calls(calls)}: {tokens}"


def dollars_text(dollars: float | None, tally: Mapping[str, Any]) -> str:
    """`$0.0123`, `at least $0.0123` when some calls reported no usage, or `unknown`."""
    if dollars is None:
        return UNKNOWN
    shown = f"${dollars:.4f}" if dollars < 1 else f"${dollars:,.2f}"
    return f"at least {shown}" if int(tally.get("no_usage") or 0) else shown

"""Tokens a run used, per node and per plan step: typed tallies and pure arithmetic on them.

A `Tally` sums model calls: how many were made (`calls`), how many of them came back without
the usage the server is asked to report (`no_usage`: their tokens are unknown, never guessed),
and the `input`, `cached` (the part of the input read from the server's prompt cache) and
`output` tokens of the others. `RunUsage` is what a run's state keeps: a tally per graph node
(`planner`, `replanner`, `executor`) and one per plan step, by step id as a string (the executor
calls made for it; the step's text is in the plan and the executed steps). `merge_usage` adds
two of them, which is how parallel steps' usage lands. The names are short because every
checkpoint holds the whole usage.

What the tokens cost (model prices) is the command line's business: `replan.cli.pricing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

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

"""A run's model usage, per node and per step, for people (`usage_report`) and for scripts
(`usage_summary`), with its cost when the run has a price."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replan.cli.output import SNIPPET_CHARS
from replan.cli.pricing import Pricing, cost, dollars_text
from replan.graphs.graph_state import ANSWER, EXECUTOR, PLANNER, REPLANNER, PlanExecuteState
from replan.graphs.plan.tool_steps import first_line
from replan.state.usage import TOKEN_FIELDS, RunUsage, tally_text, tokens_known, total_tally

NODE_ORDER = (PLANNER, EXECUTOR, REPLANNER, ANSWER)
"""How usage lists the nodes that call the model (others follow by name)."""


def tally_json(tally: Mapping[str, Any], pricing: Pricing | None) -> dict[str, Any]:
    """A tally for scripts: token counts are null when no call reported them, and with a
    price, `cost_usd` (null when unknown)."""
    known = tokens_known(tally)
    document: dict[str, Any] = {
        "calls": tally["calls"],
        "no_usage": tally["no_usage"],
        **{name: tally[name] if known else None for name in TOKEN_FIELDS},
    }
    if pricing is not None:
        document["cost_usd"] = cost(tally, pricing.price)
    return document


def _nodes(usage: RunUsage) -> list[str]:
    names = list(usage.get("nodes") or {})
    return sorted(names, key=lambda n: (NODE_ORDER.index(n) if n in NODE_ORDER else 99, n))


def _step_keys(usage: RunUsage) -> list[str]:
    return sorted(usage.get("steps") or {}, key=lambda key: (len(key), key))


def _step_texts(values: PlanExecuteState) -> dict[str, str]:
    """The text of every step of the run, by step id as a string."""
    steps = [*values.get("plan", []), *values.get("executed_steps", [])]
    return {str(step["id"]): step["step"] for step in steps if "id" in step}


def usage_summary(values: PlanExecuteState, pricing: Pricing | None) -> dict[str, Any]:
    """The run's usage for scripts: `total`, per `nodes` and per `steps` (by step id, with the
    step's text), and the `pricing` used (null without one)."""
    usage = values.get("usage") or RunUsage()
    steps, texts = usage.get("steps") or {}, _step_texts(values)
    nodes = usage.get("nodes") or {}
    return {
        "total": tally_json(total_tally(usage), pricing),
        "nodes": {node: tally_json(nodes[node], pricing) for node in _nodes(usage)},
        "steps": {
            key: {"step": texts.get(key, ""), **tally_json(steps[key], pricing)}
            for key in _step_keys(usage)
        },
        "pricing": None
        if pricing is None
        else {
            "source": pricing.source,
            "input_per_million": pricing.price.input,
            "cached_input_per_million": pricing.price.cached_input,
            "output_per_million": pricing.price.output,
        },
    }


def _usage_line(label: str, tally: Mapping[str, Any], pricing: Pricing | None) -> str:
    text = f"{label}: {tally_text(tally)}"
    if pricing is not None:
        text += f"; cost {dollars_text(cost(tally, pricing.price), tally)}"
    return text


def usage_report(values: PlanExecuteState, pricing: Pricing | None) -> str:
    """The run's usage for people: the total (and its cost with a price), then each node, the
    executor's line followed by one per step; "unknown" where tokens were not reported."""
    usage = values.get("usage") or RunUsage()
    texts = _step_texts(values)
    total = total_tally(usage)
    if not total["calls"]:
        return "no model calls recorded"
    lines = [_usage_line("total", total, pricing)]
    if pricing is not None:
        lines[0] += f" ({pricing.source})"
    steps = usage.get("steps") or {}
    for node in _nodes(usage):
        lines.append(_usage_line(node, (usage.get("nodes") or {})[node], pricing))
        if node == EXECUTOR:
            lines += [
                "  "
                + _usage_line(
                    f"step {key} ({first_line(texts.get(key, ''), SNIPPET_CHARS)})",
                    steps[key],
                    pricing,
                )
                for key in _step_keys(usage)
            ]
    return "\n".join(lines)

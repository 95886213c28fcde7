"""A run's settings on the command line: the `Context` a run or resume uses (options given now,
else those the run started with) and what the run stores of them (its `--tools` reference
too), so that `resume` continues it the same way."""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any

from replan.cli.output import CliError, ExitCode
from replan.graphs.context import Context
from replan.graphs.persistence import stored_settings

PRICES_TOGETHER = "--price-in and --price-out go together: give both"
"""The usage error of one price given alone (where the run has none of its own)."""
TOOLS_SETTING = "tools"
"""The key of a run's stored settings that holds its `--tools` reference (absolute file path)."""


def run_context(args: argparse.Namespace, stored: dict[str, Any]) -> Context:
    """The run's settings: options given now, else those in the checkpoint metadata `stored`."""
    names = {f.name for f in fields(Context)}
    before = stored_settings(stored) or {}
    settings = {key: value for key, value in before.items() if key in names}
    settings.update(
        {key: value for key in names if (value := getattr(args, key, None)) is not None}
    )
    if (settings.get("price_in") is None) != (settings.get("price_out") is None):
        raise CliError(ExitCode.USAGE, PRICES_TOGETHER)
    try:
        return Context(**settings)
    except (TypeError, ValueError) as exc:
        raise CliError(ExitCode.USAGE, f"bad run settings: {exc}") from None


def stored_tools(stored: dict[str, Any]) -> str | None:
    """The `--tools` reference a run stored in its checkpoint metadata `stored`, if any."""
    reference = (stored_settings(stored) or {}).get(TOOLS_SETTING)
    return None if reference is None else str(reference)


def settings_to_store(context: Context, tools_reference: str | None) -> dict[str, Any]:
    """What a run stores as its settings: the context's, and its `--tools` reference."""
    settings = context.settings()
    return settings if tools_reference is None else {**settings, TOOLS_SETTING: tools_reference}

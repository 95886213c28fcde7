"""A run's settings on the command line: the `Context` a run, follow-up or resume uses (the
run's saved settings, changed by the options given now), and its errors in the options' names."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from typing import Any

from replan.cli.output import CliError, ExitCode
from replan.graphs.context import SETTING_NAMES, Context, settled

_FIELD = re.compile(r"\b(" + "|".join(sorted(n for n in SETTING_NAMES if "_" in n)) + r")\b")
"""A `Context` field name of two words or more in a message (one-word names are words too)."""


def as_options(message: str) -> str:
    """`message` with the `Context` fields it names written as the command's options
    (`price_in` → `--price-in`)."""
    return _FIELD.sub(lambda match: "--" + match[1].replace("_", "-"), message)


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The run settings the command line gives now (options left out are not given)."""
    return {
        name: value for name in SETTING_NAMES if (value := getattr(args, name, None)) is not None
    }


def cli_context(args: argparse.Namespace, saved: Mapping[str, Any] | None) -> Context:
    """The run's settings: its `saved` ones (None for a new thread), changed by the options
    given now; a usage error, in the options' names, for settings no run could use."""
    try:
        return settled(saved, given_settings(args))
    except (TypeError, ValueError) as exc:
        raise CliError(ExitCode.USAGE, as_options(str(exc))) from None

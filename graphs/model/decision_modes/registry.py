"""The decision modes by name: each is the `STRATEGY` of the module of this package named as
the mode, for each name of `replan.graphs.context.DecisionMode`, whose order is the order a run
falls back through when the server refuses a mode (`fallbacks_after`). Adding a mode is adding
its module here and its name there."""

from __future__ import annotations

import importlib
from typing import cast

from replan.graphs.context import DECISION_MODES, DecisionMode
from replan.graphs.model.decision_modes.strategy import ModeStrategy

STRATEGIES: dict[DecisionMode, ModeStrategy] = {
    name: cast(ModeStrategy, importlib.import_module(f"{__package__}.{name}").STRATEGY)
    for name in DECISION_MODES
}


def strategy(mode: DecisionMode) -> ModeStrategy:
    """The strategy of `mode`."""
    return STRATEGIES[mode]


def fallbacks_after(mode: DecisionMode) -> list[DecisionMode]:
    """`mode`, then the modes a run tries if the server refuses it, in order."""
    return list(DECISION_MODES[DECISION_MODES.index(mode) :])


def asks_json(mode: DecisionMode) -> bool:
    """Whether `mode` asks for a JSON object as the reply, not a tool call."""
    return strategy(mode).response_format({}, "decision") is not None

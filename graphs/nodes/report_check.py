"""The executor's check of a step report made without a tool call: a report that says it failed,
or gives figures nothing it was shown holds, earns one reminder of the run's tools, with the
tool to force when the step names one."""

from __future__ import annotations

import re
from collections.abc import Sequence

from replan.graphs.model.offers import ToolOffer
from replan.graphs.prompts import Prompts
from replan.graphs.prompts.executor import FAILED_PREFIX

_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_NUMBERING = re.compile(r"^\s*\d+[.)](?=\s)", re.M)
SHOWN_FIGURES = 3


def _numbers(text: str) -> list[tuple[str, float]]:
    """Each number written in `text` (thousands separators allowed) with its value; list
    numbering at the start of a line ("1.", "2)") left out."""
    found = []
    for match in _NUMBER.findall(_NUMBERING.sub(" ", text)):
        written = match.rstrip(",")
        found.append((written, float(written.replace(",", ""))))
    return found


def unexplained_figures(report: str, given: Sequence[str]) -> list[str]:
    """The numbers of `report` that none of the `given` texts (what the step was shown and
    what its tools answered) holds, in order, each once."""
    known = {value for text in given for _, value in _numbers(text)}
    figures: dict[str, None] = {}
    for written, value in _numbers(report):
        if value not in known:
            figures.setdefault(written)
    return list(figures)


def is_failure_report(text: str) -> bool:
    """Whether a report says its step failed: it starts with FAILED_PREFIX, also inside a code
    fence, as small models write it."""
    return text.lstrip("` \n").upper().startswith(FAILED_PREFIX)


def _words(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").lower()


def tool_to_force(offer: ToolOffer, step: str, builds_on: bool) -> str | None:
    """The caller's tool a reminded executor is made to call: the run's only tool, or the only
    one whose name the step's text holds (with spaces for underscores); else, when the step
    names none, the only computing tool for a step that builds on earlier results, or the only
    other tool for one that does not (a look-up); else None."""
    if len(offer.own) == 1:
        return offer.own[0]
    text = _words(step)
    named = [name for name in offer.own if _words(name) in text]
    if named:
        return named[0] if len(named) == 1 else None
    kind = [name for name in offer.own if (name in offer.computing) == builds_on]
    return kind[0] if len(kind) == 1 else None


def reminder_problem(
    prompts: Prompts, report: str, given: Sequence[str], *, figures: bool = True
) -> str | None:
    """What is wrong with a `report` made without a tool call, as the reminder says it (it
    reports a failure, or, when `figures` are checked, figures none of the `given` texts
    holds); None when nothing is."""
    if not report.strip():
        return None
    if is_failure_report(report):
        return prompts.reminder_failed
    unexplained = unexplained_figures(report, given) if figures else []
    if unexplained:
        return prompts.reminder_figures.format(figures=", ".join(unexplained[:SHOWN_FIGURES]))
    return None

"""What the probes of `replan check` mean for runs: the way of asking for decisions to use, the
settings, why runs cannot work on the server (problems) and what else they should know
(notes), gathered in a `ServerReport`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from replan.cli.probes import (
    CHECK_MAX_TOKENS,
    MODE_PROBES,
    WORKING,
    Outcome,
    Probe,
    ProbeName,
    ServerReport,
    Settings,
    Speed,
)
from replan.graphs.context import DECISION_MODES, Context, DecisionMode
from replan.graphs.model.client import reply_limit


def _mode_outcome(outcomes: Sequence[Outcome]) -> Outcome:
    """A mode's outcome from those of its requests: the worst of them."""
    for worst in ("refused", "failed", "ignored", "skipped", "as_text"):
        if worst in outcomes:
            return worst
    return "honoured"


def chosen_mode(modes: dict[DecisionMode, Outcome]) -> DecisionMode | None:
    """The first mode of `DECISION_MODES` found honoured, else the first whose calls came as
    text, else the first asked and not refused (None when there is none)."""
    for wanted in (("honoured",), ("as_text",), ("ignored", "failed")):
        for mode in DECISION_MODES:
            if modes[mode] in wanted:
                return mode
    return None


def _limit_field(base_url: str | None) -> str:
    return "max_tokens" if "extra_body" in reply_limit(base_url, 1) else "max_completion_tokens"


def server_report(
    context: Context,
    models: list[str] | None,
    probes: dict[ProbeName, Probe],
    speed: Speed | None,
) -> ServerReport:
    """The report on the server `context` names, from the `probes` asked there, the `models`
    it lists and the `speed` of its streamed reply."""
    modes = {
        mode: _mode_outcome([probes[name].outcome for name in names])
        for mode, names in MODE_PROBES.items()
    }
    mode = chosen_mode(modes)
    recovered = [probe for probe in probes.values() if probe.recovered]
    settings = Settings(
        decision_mode=mode,
        recover_text_calls=True,
        decision_max_tokens=context.decision_max_tokens,
        executor_max_tokens=context.executor_max_tokens,
        reply_limit_field=_limit_field(context.base_url),
        timeout=context.timeout,
    )
    problems: list[str] = []
    plain = probes["plain"]
    if plain.outcome == "failed":
        problems.append(f"a plain chat completion failed: {plain.detail}")
    elif mode is None or modes[mode] not in WORKING:
        shown = ", ".join(f"{name} {outcome}" for name, outcome in modes.items())
        problems.append(f"no way of asking for a decision gave a usable one ({shown})")
    notes = _notes(context, models, probes, recovered, speed)
    return ServerReport(
        base_url=context.base_url,
        model=context.model,
        models=models,
        probes=probes,
        modes=modes,
        settings=settings,
        speed=speed,
        usable=not problems,
        problems=problems,
        notes=notes,
    )


def _notes(
    context: Context,
    models: list[str] | None,
    probes: dict[ProbeName, Probe],
    recovered: list[Probe],
    speed: Speed | None,
) -> list[str]:
    notes: list[str] = []
    if models is not None and context.model not in models:
        listed = ", ".join(models) or "none"
        notes.append(f"the server does not list the model {context.model} (it lists: {listed})")
    if recovered:
        names = ", ".join(probe.name for probe in recovered)
        notes.append(
            f"tool calls written as text were recovered ({names}): keep recover_text_calls on"
        )
    if probes["plain"].usage is False and probes["stream"].usage is False:
        notes.append("the server reports no token usage: runs count their calls, not tokens")
    if probes["auto"].outcome not in WORKING and probes["auto"].outcome != "skipped":
        notes.append("no tool call with tool_choice 'auto': the executor's tools may go unused")
    if cut := [probe.name for probe in probes.values() if probe.cut_off]:
        notes.append(
            f"replies cut off at {CHECK_MAX_TOKENS} tokens ({', '.join(cut)}): the model may "
            "run on; runs correct such decisions, bounded by decision_max_tokens"
        )
    if speed is not None and context.timeout is not None:
        longest = max(context.decision_max_tokens, context.executor_max_tokens)
        needed = speed.reply_seconds(longest)
        if needed > context.timeout:
            notes.append(
                f"at about {speed.tokens_per_second:.1f} tokens/s a reply of {longest} tokens "
                f"takes about {needed:.0f} s, more than the {context.timeout:g} s timeout: give "
                f"--timeout {math.ceil(needed * 1.2)} or lower the reply limits"
            )
    return notes

"""`replan check`: probe a model server and print what it does and the settings runs would use.

The probes are asked by `replan.cli.server_check`; this module only shows their report: a table
for people on stdout (or with `--json` one JSON document), progress on stderr.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from replan.cli.output import CliError, ExitCode, emit, one_line, say
from replan.cli.probes import CHECK_MAX_TOKENS, PROBES, Outcome, Probe, ProbeName, ServerReport
from replan.cli.server_check import check_server
from replan.graphs.context import OPENAI_HOST, Context
from replan.graphs.errors import ModelUnavailableError

LABELS: dict[ProbeName, str] = {
    "plain": "plain reply",
    "auto": 'tool calls, tool_choice "auto"',
    "several": "several tool calls in one reply",
    "named": "named function (`plan`)",
    "required": 'tool_choice "required"',
    "decide": "named function (`decide`)",
    "json_schema": "response_format json_schema",
    "json_object": "response_format json_object + schema",
    "stream": "streaming",
}
FEATURES: frozenset[ProbeName] = frozenset({"plain", "auto", "several", "stream"})
"""Probes shown as yes / no; the others (decision requests) as honoured / ignored / refused."""
DETAIL_CHARS = 70
LABEL_WIDTH = 38


def _short(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "…"


def describe(probe: Probe) -> str:
    """What a probe found, in words."""
    feature = probe.name in FEATURES
    words: dict[Outcome, str] = {
        "honoured": "yes" if feature else "honoured",
        "as_text": "yes, written as text" if feature else "honoured, call written as text",
        "ignored": "no" if feature else "ignored",
        "refused": f"refused (HTTP {probe.status})",
        "failed": "failed",
        "skipped": "not asked",
    }
    shown = words[probe.outcome]
    if probe.outcome == "refused":
        return shown
    detail = _short(probe.detail)
    return f"{shown} ({detail})" if detail else shown


def _yes(value: bool | None) -> str:
    return "unknown" if value is None else "yes" if value else "no"


def _server_rows(report: ServerReport) -> list[tuple[str, str]]:
    probes = report.probes
    listed = "unknown (GET /models gave no list)"
    if report.models is not None:
        listed = f"{_yes(report.model_listed)} (GET /models lists: {', '.join(report.models)})"
    recovered = [name for name in PROBES if probes[name].recovered]
    rows = [("reachable", "yes"), ("model listed", listed)]
    rows += [(LABELS[name], describe(probes[name])) for name in PROBES]
    rows.append(
        ("tool calls written as text", f"yes ({', '.join(recovered)})" if recovered else "no")
    )
    plain, stream = probes["plain"].usage, probes["stream"].usage
    rows.append(("usage reported", f"{_yes(plain)} (plain), {_yes(stream)} (streamed)"))
    return rows


def _settings_rows(report: ServerReport) -> list[tuple[str, str]]:
    settings = report.settings
    modes = ", ".join(f"{mode} {outcome}" for mode, outcome in report.modes.items())
    timeout = "none" if settings.timeout is None else f"{settings.timeout:g} s"
    rows = [
        ("decision_mode", f"{settings.decision_mode or 'none'} ({modes})"),
        ("recover_text_calls", "true" if settings.recover_text_calls else "false"),
        (
            "reply limits",
            f"decision_max_tokens {settings.decision_max_tokens}, executor_max_tokens "
            f"{settings.executor_max_tokens}, sent as {settings.reply_limit_field}; "
            f"timeout {timeout}",
        ),
    ]
    if report.speed is not None:
        rows.append(
            (
                "speed",
                f"about {report.speed.tokens_per_second:.1f} tokens/s, first token after "
                f"{report.speed.first_token_seconds:.1f} s",
            )
        )
    return rows


def _table(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"  {label:<{LABEL_WIDTH}} {value}" for label, value in rows)


def format_report(report: ServerReport) -> str:
    """The report for people."""
    verdict = (
        "Usable: runs can work on this server with these settings."
        if report.usable
        else "Not usable: " + "; ".join(report.problems)
    )
    parts = [
        f"Server {report.base_url or OPENAI_HOST}, model {report.model}",
        "",
        "What the server does:",
        _table(_server_rows(report)),
        "",
        "Settings for runs there:",
        _table(_settings_rows(report)),
        "",
        verdict,
    ]
    if report.notes:
        parts += ["Notes:", *(f"  - {note}" for note in report.notes)]
    return "\n".join(parts)


def _progress(
    context: Context, quiet: bool
) -> tuple[Callable[[ProbeName], None], Callable[[Probe], None]]:
    """Callbacks saying on stderr which probe is asked and what it found."""

    def started(name: ProbeName) -> None:
        if quiet:
            return
        if name == PROBES[0]:
            say(
                f"Checking {context.base_url or OPENAI_HOST} (model {context.model}): "
                f"{len(PROBES)} small requests of at most {CHECK_MAX_TOKENS} tokens each"
            )
        say(f"Probing {LABELS[name]} …")

    def done(probe: Probe) -> None:
        if not quiet:
            say(f"  {describe(probe)} ({probe.seconds:.1f} s)")

    return started, done


def execute(args: argparse.Namespace) -> ExitCode:
    """Probe the server; exit 0 when runs can work there, 1 when not, 3 when it is out of
    reach (or no API key is set)."""
    given = {name: getattr(args, name) for name in ("model", "base_url", "timeout")}
    context = Context(**{name: value for name, value in given.items() if value is not None})
    try:
        report = check_server(context, *_progress(context, args.quiet))
    except ModelUnavailableError as exc:
        raise CliError(ExitCode.MODEL_UNAVAILABLE, one_line(str(exc))) from None
    if args.json:
        emit(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
    else:
        emit(format_report(report))
    if not report.usable:
        say(f"replan check: not usable: {'; '.join(report.problems)}")
        return ExitCode.FAILED
    return ExitCode.OK

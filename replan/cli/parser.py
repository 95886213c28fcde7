"""The argument parser of `replan`: commands, options and their checks."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from dataclasses import MISSING, fields
from importlib.metadata import version
from typing import Any, NoReturn

from replan.cli.output import ExitCode, exit_code_help
from replan.graphs.context import (
    ANSWER_MODES,
    DECISION_MODES,
    DEFAULT_ANSWER,
    DEFAULT_EXECUTOR_MAX_STEPS,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_SECONDS,
    MAX_BOUND,
    MAX_CONCURRENCY,
    MAX_REPLY_TOKENS,
    PLAN_INTEGRITIES,
    REPLAN_MODES,
    SEALED_CALL_CHOICES,
    TASK_TOOLS_CHOICES,
    TOOL_ERRORS_CHOICES,
    TOOL_STEPS_CHOICES,
    Context,
)
from replan.graphs.persistence import DEFAULT_DB
from replan.graphs.setting_checks import check_price

MAX_TEMPERATURE = 2.0


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (and exit code 2), pointing to the help of
    the command they concern (`replan run --help` for an unknown option of `run`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        """As argparse's, but arguments nobody recognised are reported by the command's parser
        (argparse's own reports them as the top-level parser's)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            commands = next(
                (a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None
            )
            command = commands.choices.get(getattr(parsed, "command", "")) if commands else None
            (command if isinstance(command, Parser) else self).error(
                f"unrecognized arguments: {' '.join(extras)}"
            )
        return parsed


def _count(minimum: int, maximum: int = MAX_BOUND) -> Any:
    """An argparse type: a whole number from `minimum` to `maximum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be from {minimum} to {maximum}, not {value}")
        return value

    return parse


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def _seconds(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def _temperature(text: str) -> float:
    value = _number(text)
    if not 0 <= value <= MAX_TEMPERATURE:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_TEMPERATURE:g}, not {text}")
    return value


def _price(text: str) -> float:
    try:
        return float(check_price("a price", _number(text)) or 0)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _name(text: str) -> str:
    """An argparse type: a name that is not empty (a model, a thread id)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"not an http:// or https:// URL: {text!r}")
    return text


def _field_default(name: str) -> Any:
    default = next(f.default for f in fields(Context) if f.name == name)
    return None if default is MISSING else default


def _add_server_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--model` and `--base-url`: which model on which server."""
    parser.add_argument(
        "--model", type=_name, help=f"model name (default: $REPLAN_MODEL or {DEFAULT_MODEL})"
    )
    parser.add_argument(
        "--base-url", type=_url, help="OpenAI-compatible API URL (default: $OPENAI_BASE_URL)"
    )


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model and run options (resume: default the run's own)")
    _add_server_options(group)
    group.add_argument(
        "--temperature",
        type=_temperature,
        help=f"0 to {MAX_TEMPERATURE:g} (default: {_field_default('temperature')})",
    )
    group.add_argument(
        "--max-retries",
        type=_count(0),
        help="retries of a failed model request: HTTP 429/5xx, timeouts "
        f"(default: {_field_default('max_retries')})",
    )
    group.add_argument(
        "--timeout",
        type=_seconds,
        help=f"seconds to wait for one model request (default: {DEFAULT_TIMEOUT_SECONDS:g})",
    )
    group.add_argument(
        "--decision-max-tokens",
        type=_count(1, MAX_REPLY_TOKENS),
        metavar="N",
        help="most tokens in a planner or replanner reply "
        f"(default: {_field_default('decision_max_tokens')})",
    )
    group.add_argument(
        "--executor-max-tokens",
        type=_count(1, MAX_REPLY_TOKENS),
        metavar="N",
        help=f"most tokens in an executor reply (default: {_field_default('executor_max_tokens')})",
    )
    group.add_argument(
        "--max-iterations",
        type=_count(1),
        help=f"most execute→replan rounds (default: {DEFAULT_MAX_ITERATIONS})",
    )
    group.add_argument(
        "--executor-max-steps",
        type=_count(1),
        help=f"most model calls per step (default: {DEFAULT_EXECUTOR_MAX_STEPS})",
    )
    group.add_argument(
        "--max-plan-steps",
        type=_count(1, MAX_BOUND),
        metavar="N",
        help=f"most steps one plan may list (default: {_field_default('max_plan_steps')})",
    )
    group.add_argument(
        "--max-concurrency",
        type=_count(1, MAX_CONCURRENCY),
        metavar=f"1..{MAX_CONCURRENCY}",
        help=f"most steps run at the same time (default: {DEFAULT_MAX_CONCURRENCY})",
    )
    group.add_argument(
        "--replan",
        choices=REPLAN_MODES,
        help="ask the replanner after each wave of steps (default) or only when needed",
    )
    group.add_argument(
        "--no-text-calls",
        dest="recover_text_calls",
        action="store_false",
        default=None,
        help="do not read tool calls that the model wrote as text (default: read them)",
    )
    group.add_argument(
        "--task-tools",
        choices=TASK_TOOLS_CHOICES,
        help="the executor's task tools: short descriptions (default), full ones, or none",
    )
    group.add_argument(
        "--tools",
        metavar="REF",
        help="the run's own tools: PATH.py:NAME or package.module:NAME (as langgraph.json "
        "names graphs) naming a LangChain tool or a list of them (resume: the run's own)",
    )
    group.add_argument(
        "--tool-steps",
        choices=TOOL_STEPS_CHOICES,
        help="let plans call the run's own tools directly, with no model call (auto, default: "
        "whenever the run has tools of its own) or never (off)",
    )
    group.add_argument(
        "--tool-errors",
        choices=TOOL_ERRORS_CHOICES,
        help="what an exception raised by one of the run's own tools does: becomes that "
        "call's error result, which the model reads and the replanner can work around "
        f"(report, default: {_field_default('tool_errors')}), or ends the run (raise)",
    )
    group.add_argument(
        "--plan-integrity",
        choices=PLAN_INTEGRITIES,
        help="hold calls a turn's first plan did not declare (sealed), or not (open, default)",
    )
    group.add_argument(
        "--sealed-calls",
        choices=SEALED_CALL_CHOICES,
        help="a held call pauses for a decision (ask, default) or fails (refuse)",
    )
    group.add_argument(
        "--decision-mode",
        choices=DECISION_MODES,
        help="how the planner and replanner ask for their decision: a forced tool call "
        "(tool_required, default), one tool named in tool_choice (tool_named), or a JSON reply "
        "(json_schema, json_object); a mode the server refuses, or whose replies keep "
        "carrying no decision, falls back to another",
    )
    group.add_argument(
        "--answer",
        choices=ANSWER_MODES,
        help="how the final answer is written: a plain-text request from the results "
        f"(plain) or inside the replanner's decision (decision) (default: {DEFAULT_ANSWER})",
    )


def _add_price_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "cost estimate (default: the run's own prices, else OpenAI's list price of its model)"
    )
    group.add_argument(
        "--price-in", type=_price, metavar="USD", help="dollars per million input tokens"
    )
    group.add_argument(
        "--price-out", type=_price, metavar="USD", help="dollars per million output tokens"
    )


def _add_output_options(parser: argparse.ArgumentParser, *, progress: bool) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    if progress:
        parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `replan`."""
    parser = Parser(
        prog="replan",
        description="Plan–execute–replan agent runs, saved in SQLite or PostgreSQL and resumable.",
        epilog=exit_code_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"replan {version('replan')}")
    db = Parser(add_help=False)
    db.add_argument(
        "--db",
        default=os.environ.get("REPLAN_DB") or DEFAULT_DB,
        help=f"SQLite file or postgresql:// URL of the runs (default: $REPLAN_DB or {DEFAULT_DB})",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", parents=[db], help="start a run")
    run.add_argument(
        "objective", nargs="?", help='what the agent should achieve ("-": read it from stdin)'
    )
    run.add_argument("--objective-file", metavar="PATH", help="read the objective from a file")
    run.add_argument(
        "--thread-id", type=_name, default=None, help="id for the run (default: generated)"
    )
    run.add_argument(
        "--approve-plan", action="store_true", default=None, help="review the plan before it runs"
    )
    _add_output_options(run, progress=True)
    _add_model_options(run)
    _add_price_options(run)

    resume = commands.add_parser("resume", parents=[db], help="continue a stopped run")
    resume.add_argument("--thread-id", type=_name, required=True)
    review = resume.add_mutually_exclusive_group()
    review.add_argument("--approve", action="store_true", help="approve the waiting plan")
    review.add_argument("--reject", nargs="?", const="", metavar="REASON", help="reject it")
    review.add_argument("--edit-plan", nargs="+", metavar="STEP", help="replace its steps")
    review.add_argument(
        "--respond",
        metavar="RESULT",
        help="give a waiting tool call (in flight when the run stopped) this result instead "
        "of calling it again",
    )
    _add_output_options(resume, progress=True)
    _add_model_options(resume)
    _add_price_options(resume)

    show = commands.add_parser("show", parents=[db], help="show a stored run")
    show.add_argument("--thread-id", type=_name, required=True)
    _add_output_options(show, progress=False)
    _add_price_options(show)

    threads = commands.add_parser("threads", parents=[db], help="list the stored runs")
    _add_output_options(threads, progress=False)

    ui = commands.add_parser("ui", parents=[db], help="watch and answer runs in a local page")
    ui.add_argument(
        "--port", type=_count(0, 65535), default=0, help="port on 127.0.0.1 (default: a free one)"
    )

    check = commands.add_parser(
        "check", help="probe a model server: what it supports, the settings runs would use"
    )
    _add_output_options(check, progress=True)
    _add_server_options(check)
    check.add_argument(
        "--timeout",
        type=_seconds,
        help=f"seconds to wait for one probe (default: {DEFAULT_TIMEOUT_SECONDS:g})",
    )
    return parser

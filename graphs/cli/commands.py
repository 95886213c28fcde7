"""The `replan` command line: run, resume and inspect persistent plan–execute runs.

Commands (all take `--db PATH_OR_URL`, default `$REPLAN_DB` or ./replan.sqlite; a
`postgresql://` URL keeps the runs in PostgreSQL):

    replan run "OBJECTIVE" [--thread-id ID] [--approve-plan] [model options]
    replan resume --thread-id ID [--approve | --reject [REASON] | --edit-plan STEP ...]
    replan show --thread-id ID
    replan threads

Progress goes to stderr, the final answer to stdout. Exit codes:

    0  the run finished (the answer is on stdout)
    1  the run failed (the model misbehaved past its retries, or an unexpected error)
    2  usage error (bad arguments, thread id already used, no plan waiting for approval)
    3  the model is unavailable (no API key, server unreachable or answering errors)
    4  the plan is waiting for approval and there is no terminal to ask on
    5  no such run (unknown database or thread id)
    7  the database cannot be opened or reached (or PostgreSQL support is not installed)
    130 interrupted with Ctrl-C

Every failure after the run started leaves a checkpoint: `replan resume` continues from it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shlex
import sys
import uuid
from collections.abc import Awaitable
from enum import IntEnum
from typing import Any

import openai
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from replan.graphs.cli.persistence import (
    DEFAULT_DB,
    DatabaseUnavailableError,
    database_exists,
    display_target,
    open_checkpointer,
    stored_thread_ids,
)
from replan.graphs.cli.progress import (
    ProgressPrinter,
    describe_run,
    is_finished,
    run_line,
    run_status,
)
from replan.graphs.context import (
    DEFAULT_MAX_CONCURRENCY,
    MAX_CONCURRENCY,
    REPLAN_MODES,
    Context,
    check_count,
)
from replan.graphs.errors import ModelUnavailableError, ReplanError
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.state import format_plan


class ExitCode(IntEnum):
    """Process exit codes (see the module docstring)."""

    OK = 0
    FAILED = 1
    USAGE = 2
    MODEL_UNAVAILABLE = 3
    AWAITING_APPROVAL = 4
    NO_SUCH_RUN = 5
    DATABASE_UNAVAILABLE = 7
    INTERRUPTED = 130


class CliError(Exception):
    """A failure reported as one line on stderr, with its exit code."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


SETTINGS_KEY = "replan_settings"
"""Checkpoint metadata key holding the run's `Context` settings, so `resume` continues it the
same way (same model, endpoint and bounds) unless options given now override them."""
CONTEXT_OPTIONS = (
    "model",
    "base_url",
    "temperature",
    "max_retries",
    "timeout",
    "approve_plan",
    "max_iterations",
    "executor_max_steps",
    "max_concurrency",
    "replan",
)


def _resume_hint(args: argparse.Namespace) -> str:
    db = "" if args.db == DEFAULT_DB else f" --db {shlex.quote(display_target(args.db))}"
    return f"replan resume --thread-id {args.thread_id}{db}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _config(args: argparse.Namespace, context: Context | None = None) -> RunnableConfig:
    metadata = {} if context is None else {SETTINGS_KEY: context.settings()}
    return {"configurable": {"thread_id": args.thread_id}, "metadata": metadata}


def _context(args: argparse.Namespace, metadata: dict[str, Any]) -> Context:
    """The run's settings: options given now, else those the run started with."""
    settings = dict(metadata.get(SETTINGS_KEY) or {})
    settings.update(
        {key: value for key in CONTEXT_OPTIONS if (value := getattr(args, key, None)) is not None}
    )
    return Context(**settings)


def _graph(saver: BaseCheckpointSaver[str]) -> CompiledStateGraph[Any, Any, Any, Any]:
    return build_plan_execute_graph(checkpointer=saver)


def _ask(question: str) -> str:
    _say(question)
    return input().strip()


def ask_review(plan: list[str]) -> Any:
    """Ask on the terminal: approve, edit (type new steps) or reject; the resume value."""
    _say(f"The plan waits for your approval:\n{format_plan(plan)}")
    while True:
        answer = _ask("Approve this plan? [a]pprove / [e]dit / [r]eject:").lower()
        if answer in ("a", "approve", "y", "yes"):
            return "approve"
        if answer in ("r", "reject", "n", "no"):
            return {"action": "reject", "reason": _ask("Reason (optional):")}
        if answer in ("e", "edit"):
            steps = iter(lambda: _ask("Step (empty line to finish):"), "")
            edited = [step for step in steps if step.strip()]
            if edited:
                return {"action": "edit", "steps": edited}
            _say("An edited plan needs at least one step.")


def _review_from_flags(args: argparse.Namespace) -> Any:
    """The resume value `--approve`, `--reject` or `--edit-plan` asks for, or None."""
    if args.approve:
        return "approve"
    if args.reject is not None:
        return {"action": "reject", "reason": args.reject}
    if args.edit_plan:
        return {"action": "edit", "steps": args.edit_plan}
    return None


async def _drive(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    payload: Any,
    config: RunnableConfig,
    context: Context,
    args: argparse.Namespace,
) -> ExitCode:
    """Stream the run to its end, answering plan reviews; print the answer."""
    printer = ProgressPrinter(sys.stderr)
    while True:
        stream = graph.astream(
            payload,
            config,
            context=context,
            stream_mode=["updates", "tasks"],
            durability="sync",  # each step's checkpoint is on disk before the next step starts
        )
        async for mode, chunk in stream:
            printer.handle(mode, chunk)
        snapshot = await graph.aget_state(config)
        if not snapshot.interrupts:
            break
        if not sys.stdin.isatty():
            _say(
                "The plan is waiting for approval. Answer with: "
                f"{_resume_hint(args)} --approve | --reject [REASON] | --edit-plan STEP ..."
            )
            return ExitCode.AWAITING_APPROVAL
        payload = Command(resume=ask_review(snapshot.interrupts[0].value["plan"]))
    if not is_finished(snapshot):
        raise CliError(ExitCode.FAILED, f"the run stopped: {run_status(snapshot)}")
    print(snapshot.values.get("response", ""), flush=True)
    return ExitCode.OK


async def _guarded(run: Awaitable[ExitCode], args: argparse.Namespace) -> ExitCode:
    """Turn a run's known failures into a one-line error plus how to resume."""
    try:
        return await run
    except (ReplanError, openai.APIError) as exc:
        unavailable = isinstance(exc, ModelUnavailableError)
        code = ExitCode.MODEL_UNAVAILABLE if unavailable else ExitCode.FAILED
        _say(f"replan: {_one_line(str(exc))}")
        _say(f"The run is saved; continue it with: {_resume_hint(args)}")
        return code


async def cmd_run(args: argparse.Namespace) -> ExitCode:
    """Start a new run of OBJECTIVE on a fresh (or given, unused) thread id."""
    if not args.objective.strip():
        raise CliError(ExitCode.USAGE, "the objective is empty: say what the run should achieve")
    async with open_checkpointer(args.db) as saver:
        if await saver.aget_tuple(_config(args)) is not None:
            raise CliError(
                ExitCode.USAGE,
                f"thread {args.thread_id} already exists; continue it with: {_resume_hint(args)}",
            )
        context = _context(args, {})
        _say(f"Thread {args.thread_id} (resume with: {_resume_hint(args)})")
        payload = {"messages": [HumanMessage(args.objective)]}
        run = _drive(_graph(saver), payload, _config(args, context), context, args)
        return await _guarded(run, args)


def _require_db(args: argparse.Namespace) -> None:
    if not database_exists(args.db):
        raise CliError(ExitCode.NO_SUCH_RUN, f"no database at {args.db}")


async def _stored(saver: BaseCheckpointSaver[str], args: argparse.Namespace) -> dict[str, Any]:
    """The checkpoint metadata of the thread; CliError when the thread is unknown."""
    stored = await saver.aget_tuple(_config(args))
    if stored is None:
        raise CliError(
            ExitCode.NO_SUCH_RUN,
            f"no run with thread id {args.thread_id} in {display_target(args.db)}",
        )
    return dict(stored.metadata)


async def cmd_resume(args: argparse.Namespace) -> ExitCode:
    """Continue a stopped run from its last checkpoint (answering a pending plan review)."""
    _require_db(args)
    async with open_checkpointer(args.db) as saver:
        context = _context(args, await _stored(saver, args))
        graph = _graph(saver)
        config = _config(args, context)
        snapshot = await graph.aget_state(config)
        review = _review_from_flags(args)
        if is_finished(snapshot):
            _say(f"Thread {args.thread_id} has already finished; its answer:")
            print(snapshot.values.get("response", ""), flush=True)
            return ExitCode.OK
        if review is not None and not snapshot.interrupts:
            raise CliError(
                ExitCode.USAGE, f"thread {args.thread_id} has no plan waiting for approval"
            )
        _say(f"Resuming thread {args.thread_id} ({run_status(snapshot)})")
        payload: Command[Any] | None = None if review is None else Command(resume=review)
        return await _guarded(_drive(graph, payload, config, context, args), args)


async def cmd_show(args: argparse.Namespace) -> ExitCode:
    """Print a stored run: status, plan, executed steps, tasks and answer."""
    _require_db(args)
    async with open_checkpointer(args.db) as saver:
        await _stored(saver, args)
        snapshot = await _graph(saver).aget_state(_config(args))
        print(describe_run(args.thread_id, snapshot))
    return ExitCode.OK


async def cmd_threads(args: argparse.Namespace) -> ExitCode:
    """List the runs stored in the database, most recent first."""
    _require_db(args)
    async with open_checkpointer(args.db) as saver:
        graph = _graph(saver)
        for thread_id in await stored_thread_ids(saver):
            config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
            print(run_line(thread_id, await graph.aget_state(config)))
    return ExitCode.OK


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    def concurrency(text: str) -> int:
        try:
            return check_count("max_concurrency", int(text), minimum=1, maximum=MAX_CONCURRENCY)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from 1 to {MAX_CONCURRENCY}, not {text!r}"
            ) from exc

    group = parser.add_argument_group("model and run options")
    group.add_argument("--model", help="model name (default: $REPLAN_MODEL or gpt-4o-mini)")
    group.add_argument("--base-url", help="OpenAI-compatible API URL (default: $OPENAI_BASE_URL)")
    group.add_argument("--temperature", type=float)
    group.add_argument("--max-retries", type=int, help="retries of a failed model request")
    group.add_argument("--timeout", type=float, help="seconds to wait for one model request")
    group.add_argument("--max-iterations", type=int, help="most execute→replan rounds")
    group.add_argument("--executor-max-steps", type=int, help="most model calls per step")
    group.add_argument(
        "--max-concurrency",
        type=concurrency,
        metavar=f"1..{MAX_CONCURRENCY}",
        help=f"most steps run at the same time (default {DEFAULT_MAX_CONCURRENCY})",
    )
    group.add_argument(
        "--replan",
        choices=REPLAN_MODES,
        help="ask the replanner after each wave of steps (default) or only when needed",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `replan`."""
    parser = argparse.ArgumentParser(
        prog="replan",
        description="Plan–execute–replan agent runs, saved in SQLite or PostgreSQL and resumable.",
        epilog="exit codes: 0 ok, 1 run failed, 2 usage, 3 model unavailable, "
        "4 waiting for plan approval, 5 no such run, 7 database unavailable, 130 interrupted",
    )
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument(
        "--db",
        default=os.environ.get("REPLAN_DB") or DEFAULT_DB,
        help=f"SQLite file or postgresql:// URL of the runs (default: $REPLAN_DB or {DEFAULT_DB})",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", parents=[db], help="start a run")
    run.add_argument("objective", help="what the agent should achieve")
    run.add_argument("--thread-id", default=None, help="id for the run (default: generated)")
    run.add_argument(
        "--approve-plan", action="store_true", default=None, help="review the plan before it runs"
    )
    _add_model_options(run)
    run.set_defaults(handler=cmd_run)

    resume = commands.add_parser("resume", parents=[db], help="continue a stopped run")
    resume.add_argument("--thread-id", required=True)
    review = resume.add_mutually_exclusive_group()
    review.add_argument("--approve", action="store_true", help="approve the waiting plan")
    review.add_argument("--reject", nargs="?", const="", metavar="REASON", help="reject it")
    review.add_argument("--edit-plan", nargs="+", metavar="STEP", help="replace its steps")
    _add_model_options(resume)
    resume.set_defaults(handler=cmd_resume)

    show = commands.add_parser("show", parents=[db], help="show a stored run")
    show.add_argument("--thread-id", required=True)
    show.set_defaults(handler=cmd_show)

    threads = commands.add_parser("threads", parents=[db], help="list the stored runs")
    threads.set_defaults(handler=cmd_threads)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `replan` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    # psycopg logs what it ignores while closing a lost connection; the error says it in one line.
    if not (psycopg_log := logging.getLogger("psycopg")).handlers:
        psycopg_log.addHandler(logging.NullHandler())
    if args.command == "run" and not args.thread_id:
        args.thread_id = uuid.uuid4().hex[:12]
    try:
        return int(asyncio.run(args.handler(args)))
    except CliError as exc:
        _say(f"replan: {exc}")
        return int(exc.code)
    except DatabaseUnavailableError as exc:
        _say(f"replan: {exc}")
        return int(ExitCode.DATABASE_UNAVAILABLE)
    except KeyboardInterrupt:
        hint = f"; continue with: {_resume_hint(args)}" if getattr(args, "thread_id", None) else ""
        _say(f"replan: interrupted{hint}")
        return int(ExitCode.INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())

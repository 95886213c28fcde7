"""What the `replan` commands do: start, continue, show and list persistent runs.

`replan.cli.main` parses the command line and calls `execute(args)`; this module
holds everything that needs LangGraph and the model client, so `replan --help`, `--version`
and option errors answer without loading them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any, cast

import openai
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot
from rich.console import Console

from replan.cli.display import TICK_SECONDS, Display, LiveDisplay, NullDisplay, PlainDisplay
from replan.cli.output import CliError, ExitCode, emit, one_line, say
from replan.cli.pricing import run_pricing
from replan.cli.progress import ProgressPrinter
from replan.cli.summary import describe_run, is_finished, run_status, summarize, threads_table
from replan.cli.tool_loading import ToolLoadingError, load_tools, stored_reference
from replan.graphs.context import Context
from replan.graphs.errors import InvalidInputError, ModelUnavailableError, ReplanError
from replan.graphs.graph_state import effective_mode, reviewed_steps
from replan.graphs.model.client import require_api_key
from replan.graphs.model.http_client import model_retries_reported
from replan.graphs.persistence import (
    DEFAULT_DB,
    STARTED_KEY,
    DatabaseUnavailableError,
    database_exists,
    display_target,
    open_checkpointer,
    run_metadata,
    stored_settings,
    stored_thread_ids,
)
from replan.graphs.plan.views import format_plan
from replan.graphs.plan_execute import build_plan_execute_graph


def resume_hint(args: argparse.Namespace) -> str:
    """The command that continues the run `args` name (a URL's password masked)."""
    db = "" if args.db == DEFAULT_DB else f" --db {shlex.quote(display_target(args.db))}"
    return f"replan resume --thread-id {args.thread_id}{db}"


def _context(args: argparse.Namespace, stored: dict[str, Any]) -> Context:
    """The run's settings: options given now, else those the run started with."""
    names = {f.name for f in fields(Context)}
    before = stored_settings(stored) or {}
    settings = {key: value for key, value in before.items() if key in names}
    settings.update(
        {key: value for key in names if (value := getattr(args, key, None)) is not None}
    )
    try:
        return Context(**settings)
    except (TypeError, ValueError) as exc:
        raise CliError(ExitCode.USAGE, f"bad run settings: {exc}") from None


StreamEvent = tuple[tuple[str, ...], str, Any]
"""(namespace, mode, chunk) of `astream(..., stream_mode=[...], subgraphs=True)`."""


@dataclass
class Run:
    """One `run` or `resume` of a thread, and what to say once the thread exists."""

    args: argparse.Namespace
    graph: CompiledStateGraph[Any, Any, Any, Any]
    context: Context
    config: RunnableConfig
    announce: str = ""


def _config(thread_id: str, metadata: dict[str, Any] | None = None) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}, "metadata": metadata or {}}


def _graph(
    saver: BaseCheckpointSaver[str], tools: Sequence[BaseTool] = ()
) -> CompiledStateGraph[Any, Any, Any, Any]:
    return build_plan_execute_graph(tools=tools, checkpointer=saver)


TOOLS_SETTING = "tools"
"""The key of a run's stored settings that holds its `--tools` reference (absolute file path)."""


def _tools(args: argparse.Namespace, stored: dict[str, Any]) -> tuple[list[BaseTool], str | None]:
    """The run's own tools and the reference to store: `--tools` given now, else the one the
    run started with; a reference that does not load is a usage error (one line)."""
    reference = (stored_settings(stored) or {}).get(TOOLS_SETTING)
    try:
        if args.tools is not None:  # loaded as given, so that an error names what was typed
            return load_tools(args.tools), stored_reference(args.tools)
        return ([], None) if reference is None else (load_tools(reference), reference)
    except ToolLoadingError as exc:
        raise CliError(ExitCode.USAGE, str(exc)) from None


def _settings(context: Context, tools_reference: str | None) -> dict[str, Any]:
    """What a run stores as its settings: the context's, and its `--tools` reference."""
    settings = context.settings()
    return settings if tools_reference is None else {**settings, TOOLS_SETTING: tools_reference}


@contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C stops a waiting prompt at once: asyncio's own handler would only cancel the run
    once the prompt returned."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ask(question: str) -> str:
    """One answer typed on the terminal; EOFError on Ctrl-D."""
    say(question)
    return input().strip()


def ask_review(plan: list[Any]) -> Any:
    """Ask on the terminal: approve, edit (type new steps) or reject; the resume value, or None
    when the input ends (Ctrl-D) and the plan keeps waiting. Ctrl-C stops at once (from before
    the first question is shown)."""
    with _interruptible():
        return _review_dialogue(plan)


def _review_dialogue(plan: list[Any]) -> Any:
    say(f"The plan waits for your approval:\n{format_plan(plan)}")
    try:
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
                say("An edited plan needs at least one step.")
    except EOFError:
        say("No answer (end of input).")
        return None


def _review_from_flags(args: argparse.Namespace) -> Any:
    """The resume value `--approve`, `--reject` or `--edit-plan` asks for, or None."""
    if args.approve:
        return "approve"
    if args.reject is not None:
        return {"action": "reject", "reason": args.reject}
    if args.edit_plan:
        return {"action": "edit", "steps": args.edit_plan}
    return None


@contextmanager
def _display(quiet: bool) -> Iterator[Display]:
    """Where progress goes: live on a terminal, lines otherwise, nowhere when quiet."""
    console = Console(stderr=True)
    if quiet:
        yield NullDisplay()
    elif console.is_terminal and not console.is_dumb_terminal:
        with LiveDisplay(console) as live:
            yield live
    else:
        yield PlainDisplay(sys.stderr)


async def _tick(printer: ProgressPrinter) -> None:
    while True:
        await asyncio.sleep(TICK_SECONDS)
        printer.tick()


async def _stream(run: Run, printer: ProgressPrinter, payload: Any) -> None:
    """Stream the run until it ends or pauses, showing its progress."""
    with _display(run.args.quiet) as display, model_retries_reported(printer.model_retry):
        printer.display = display
        ticker = asyncio.create_task(_tick(printer))
        try:
            stream = run.graph.astream(
                payload,
                run.config,
                context=run.context,
                stream_mode=["updates", "tasks", "custom"],
                subgraphs=True,
                durability="sync",  # each step's checkpoint is on disk before the next starts
            )
            async for namespace, mode, chunk in cast(AsyncIterator[StreamEvent], stream):
                if run.announce:  # the first event comes once the first checkpoint is saved
                    run.args.resume_hint = resume_hint(run.args)
                    printer.note(run.announce)
                    run.announce = ""
                printer.handle(namespace, mode, chunk)
        finally:
            ticker.cancel()


async def _drive(run: Run, payload: Any) -> ExitCode:
    """Run to the end or the next pause, answering plan reviews on a terminal; report."""
    before = await run.graph.aget_state(run.config)
    printer = ProgressPrinter(
        NullDisplay(),
        usage=before.values.get("usage"),
        pricing=run_pricing(run.context.settings()),
        plain_answer=run.context.answer == "plain",
    )
    failure: Exception | None = None
    try:
        while True:
            await _stream(run, printer, payload)
            snapshot = await run.graph.aget_state(run.config)
            if not snapshot.interrupts or not sys.stdin.isatty():
                break
            answer = ask_review(reviewed_steps(snapshot.interrupts[0].value))
            if answer is None:
                break
            payload = Command(resume=answer)
    except (ReplanError, openai.APIError) as exc:
        failure = exc
    return _report(run.args, await run.graph.aget_state(run.config), failure)


def _report(
    args: argparse.Namespace, snapshot: StateSnapshot, failure: Exception | None
) -> ExitCode:
    """Say how the run stands (stdout: its answer or JSON; stderr: what to do next)."""
    summary = summarize(args.thread_id, snapshot, failure)
    status = summary["status"]
    if failure is not None:
        say(f"replan: {one_line(str(failure))}")
        say(f"The run is saved; continue it with: {resume_hint(args)}")
        code = ExitCode.FAILED
        if isinstance(failure, ModelUnavailableError):
            code = ExitCode.MODEL_UNAVAILABLE
        elif isinstance(failure, InvalidInputError):
            code = ExitCode.USAGE
    elif status == "waiting_for_approval":
        say(
            "The plan is waiting for approval. Answer with: "
            f"{resume_hint(args)} --approve | --reject [REASON] | --edit-plan STEP ..."
        )
        code = ExitCode.AWAITING_APPROVAL
    elif status == "finished":
        code = ExitCode.OK
    elif status == "not_finished":
        code = ExitCode.NOT_FINISHED
    elif status == "rejected":
        code = ExitCode.REJECTED
    else:
        say(f"replan: the run stopped: {run_status(snapshot).text()}")
        say(f"The run is saved; continue it with: {resume_hint(args)}")
        code = ExitCode.FAILED
    if args.json:
        emit(json.dumps(summary, ensure_ascii=False, indent=2))
    elif status in ("finished", "not_finished", "rejected"):
        emit(summary["response"])
    return code


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _require_model_access() -> None:
    """Refuse, before anything is stored, a run that could not make its first model call."""
    try:
        require_api_key()
    except ModelUnavailableError as exc:
        raise CliError(ExitCode.MODEL_UNAVAILABLE, str(exc)) from None


async def cmd_run(args: argparse.Namespace) -> ExitCode:
    """Start a new run of the objective on a fresh thread id, or a follow-up turn on a thread
    whose last turn ended (with the thread's settings and tools, options given now overriding
    them); a run that is refused before it could start (no API key) stores nothing."""
    metadata, snapshot = await _thread_so_far(args)
    context = _context(args, metadata)
    turn = 1
    if snapshot is not None:
        if not is_finished(snapshot):
            raise CliError(
                ExitCode.USAGE,
                f"thread {args.thread_id} has not ended ({run_status(snapshot).text()}): "
                f"continue it with: {resume_hint(args)}; a follow-up can start once it ends",
            )
        mode = effective_mode(context.decision_mode, snapshot.values.get("decision_mode"))
        context = replace(context, decision_mode=mode)
        turn = len(snapshot.values.get("turns", [])) + 2
    _require_model_access()
    tools, reference = _tools(args, metadata)
    started = metadata.get(STARTED_KEY) if snapshot is not None else _now()
    settings = run_metadata(_settings(context, reference), started)
    async with open_checkpointer(args.db) as saver:
        run = Run(args, _graph(saver, tools), context, _config(args.thread_id, settings))
        follow_up = f", turn {turn}" if turn > 1 else ""
        run.announce = f"Thread {args.thread_id}{follow_up} (resume with: {resume_hint(args)})"
        return await _drive(run, {"messages": [HumanMessage(args.objective_text)]})


async def _thread_so_far(args: argparse.Namespace) -> tuple[dict[str, Any], StateSnapshot | None]:
    """The stored metadata and state of the thread `run` was given, if it exists (read without
    creating the database)."""
    if not database_exists(args.db):
        return {}, None
    async with open_checkpointer(args.db, read_only=True) as saver:
        stored = await saver.aget_tuple(_config(args.thread_id))
        if stored is None:
            return {}, None
        return dict(stored.metadata), await _graph(saver).aget_state(_config(args.thread_id))


def _require_db(args: argparse.Namespace) -> None:
    if not database_exists(args.db):
        raise CliError(ExitCode.NO_SUCH_RUN, f"no database at {display_target(args.db)}")


async def _stored(saver: BaseCheckpointSaver[str], args: argparse.Namespace) -> dict[str, Any]:
    """The checkpoint metadata of the thread; CliError when the thread is unknown."""
    stored = await saver.aget_tuple(_config(args.thread_id))
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
        stored = await _stored(saver, args)
        args.resume_hint = resume_hint(args)
        snapshot = await _graph(saver).aget_state(_config(args.thread_id))
        context = _context(args, stored)
        review = _review_from_flags(args)
        if review is not None and not snapshot.interrupts:
            ended = " (it has ended)" if is_finished(snapshot) else ""
            raise CliError(
                ExitCode.USAGE, f"thread {args.thread_id} has no plan waiting for approval{ended}"
            )
        status = run_status(snapshot).text()
        if is_finished(snapshot):
            say(f"Thread {args.thread_id} has already ended ({status}):")
            return _report(args, snapshot, None)
        _require_model_access()
        tools, reference = _tools(args, stored)  # loaded only for a run that goes on
        # A mode the server refused earlier in the run is not asked for again.
        mode = effective_mode(context.decision_mode, snapshot.values.get("decision_mode"))
        context = replace(context, decision_mode=mode)
        metadata = run_metadata(_settings(context, reference), stored.get(STARTED_KEY))
        run = Run(args, _graph(saver, tools), context, _config(args.thread_id, metadata))
        if not args.quiet:
            say(f"Resuming thread {args.thread_id} ({status})")
        return await _drive(run, None if review is None else Command(resume=review))


def _given_prices(args: argparse.Namespace) -> dict[str, float] | None:
    """`--price-in` and `--price-out` of `show` (both or neither)."""
    if args.price_in is None and args.price_out is None:
        return None
    if args.price_in is None or args.price_out is None:
        raise CliError(ExitCode.USAGE, "--price-in and --price-out go together: give both")
    return {"price_in": args.price_in, "price_out": args.price_out}


async def cmd_show(args: argparse.Namespace) -> ExitCode:
    """Print a stored run: status (and why it failed), settings, plan, steps, tasks, model
    usage (and cost), answer."""
    prices = _given_prices(args)
    _require_db(args)
    async with open_checkpointer(args.db, read_only=True) as saver:
        await _stored(saver, args)
        snapshot = await _graph(saver).aget_state(_config(args.thread_id))
    if args.json:
        summary = summarize(args.thread_id, snapshot, prices=prices)
        emit(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        emit(describe_run(args.thread_id, snapshot, prices))
    return ExitCode.OK


async def cmd_threads(args: argparse.Namespace) -> ExitCode:
    """List the runs stored in the database, most recently updated first; with no database
    yet, the list is empty (a hint says how runs get there)."""
    if not database_exists(args.db):
        where = display_target(args.db)
        say(f'No runs yet: there is no database at {where} (replan run "OBJECTIVE" creates it).')
        if args.json:
            emit("[]")
        return ExitCode.OK
    async with open_checkpointer(args.db, read_only=True) as saver:
        graph = _graph(saver)
        runs = [
            (thread_id, await graph.aget_state(_config(thread_id)))
            for thread_id in await stored_thread_ids(saver)
        ]
    if args.json:
        summaries = [summarize(thread_id, snapshot) for thread_id, snapshot in runs]
        emit(json.dumps(summaries, ensure_ascii=False, indent=2))
    else:
        emit(threads_table(runs))
    return ExitCode.OK


async def execute(args: argparse.Namespace) -> ExitCode:
    """Run the parsed command; a database that cannot be used is a `CliError`
    (DATABASE_UNAVAILABLE)."""
    commands = {"run": cmd_run, "resume": cmd_resume, "show": cmd_show, "threads": cmd_threads}
    try:
        return await commands[args.command](args)
    except DatabaseUnavailableError as exc:
        raise CliError(ExitCode.DATABASE_UNAVAILABLE, one_line(str(exc))) from None

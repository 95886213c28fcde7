"""`replan run`, and a `replan resume` that goes on: the run's graph with its tools, built and
driven (`replan.cli.driving`). Only these load the model client; `replan.cli.commands` decides
whether a resume gets this far."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot

from replan.cli.driving import Run, drive
from replan.cli.output import CliError, ExitCode, say
from replan.cli.run_settings import cli_context
from replan.cli.stored_runs import reading_graph, resume_hint, thread_config
from replan.cli.summary import is_finished, run_status
from replan.cli.tool_loading import (
    FORMS,
    ToolLoadingError,
    ToolsNotFoundError,
    load_tools,
    stored_reference,
)
from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.graph_state import effective_mode
from replan.graphs.model.client import require_api_key
from replan.graphs.persistence import (
    STARTED_KEY,
    database_exists,
    open_checkpointer,
    run_metadata,
    saved_settings,
    stored_tools,
)
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.run_store import open_run_store
from replan.graphs.thread_leases import hold_thread, refuse_if_held


@asynccontextmanager
async def _run_graph(
    args: argparse.Namespace, saver: BaseCheckpointSaver[str], tools: Sequence[BaseTool]
) -> AsyncIterator[CompiledStateGraph[Any, Any, Any, Any]]:
    """The run's graph, holding its thread (one runner per thread: `hold_thread`) and keeping
    its tool calls' intents in the runs database (`open_run_store`)."""
    async with hold_thread(saver, args.thread_id) as leased, open_run_store(args.db) as store:
        yield build_plan_execute_graph(tools=tools, checkpointer=leased, store=store)


def _tools(args: argparse.Namespace, stored: dict[str, Any]) -> tuple[list[BaseTool], str | None]:
    """The run's own tools and the reference to store: `--tools` given now, else the one the
    run started with; a reference that does not load is a usage error (one line)."""
    reference = stored_tools(stored)
    try:
        if args.tools is not None:  # loaded as given, so that an error names what was typed
            return load_tools(args.tools), stored_reference(args.tools)
        return ([], None) if reference is None else (load_tools(reference), reference)
    except ToolsNotFoundError as exc:
        if args.tools is not None:
            raise CliError(ExitCode.USAGE, str(exc)) from None
        again = f"{resume_hint(args)} --tools" if args.command == "resume" else "--tools"
        raise CliError(
            ExitCode.USAGE, f"{exc} (the run's tools: give them anew with {again} {FORMS})"
        ) from None
    except ToolLoadingError as exc:
        raise CliError(ExitCode.USAGE, str(exc)) from None


def _with_stored_mode(context: Context, snapshot: StateSnapshot) -> Context:
    """`context` without a decision mode the server refused earlier on the thread (it is not
    asked for again)."""
    mode = effective_mode(context.decision_mode, snapshot.values.get("decision_mode"))
    return replace(context, decision_mode=mode)


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
    whose last turn ended or failed (the failed turn is kept as superseded), with the thread's
    settings and tools, options given now overriding them; a run that is refused before it
    could start (no API key) stores nothing."""
    metadata, snapshot = await _thread_so_far(args)
    context = cli_context(
        args, None if snapshot is None else saved_settings(snapshot.values, metadata)
    )
    turn = 1
    if snapshot is not None:
        if not is_finished(snapshot) and run_status(snapshot).state != "failed":
            raise CliError(
                ExitCode.USAGE,
                f"thread {args.thread_id} has not ended ({run_status(snapshot).text()}): "
                f"continue it with: {resume_hint(args)}; a follow-up can start once it ends",
            )
        context = _with_stored_mode(context, snapshot)
        turn = len(snapshot.values.get("turns", [])) + 2
    _require_model_access()
    tools, reference = _tools(args, metadata)
    started = metadata.get(STARTED_KEY) if snapshot is not None else _now()
    stored = run_metadata(reference, started)
    async with open_checkpointer(args.db) as saver, _run_graph(args, saver, tools) as graph:
        run = Run(args, graph, context, thread_config(args.thread_id, stored))
        follow_up = f", turn {turn}" if turn > 1 else ""
        run.announce = f"Thread {args.thread_id}{follow_up} (resume with: {resume_hint(args)})"
        return await drive(run, {"messages": [HumanMessage(args.objective_text)]})


async def _thread_so_far(args: argparse.Namespace) -> tuple[dict[str, Any], StateSnapshot | None]:
    """The stored metadata and state of the thread `run` was given, if it exists (read without
    creating the database)."""
    if not database_exists(args.db):
        return {}, None
    async with open_checkpointer(args.db, read_only=True) as saver:
        snapshot = await reading_graph(saver).aget_state(thread_config(args.thread_id))
        if snapshot.metadata is not None and not is_finished(snapshot):
            await refuse_if_held(saver, args.thread_id)
    if snapshot.metadata is None:
        return {}, None
    return dict(snapshot.metadata), snapshot


async def continue_run(
    args: argparse.Namespace,
    saver: BaseCheckpointSaver[str],
    stored: dict[str, Any],
    snapshot: StateSnapshot,
    context: Context,
    review: Any,
) -> ExitCode:
    """Go on with the stopped run `snapshot` shows (its checkpoint metadata `stored`, its
    settings `context`), resuming a waiting review with `review` when not None."""
    _require_model_access()
    tools, reference = _tools(args, stored)  # loaded only for a run that goes on
    context = _with_stored_mode(context, snapshot)
    metadata = run_metadata(reference, stored.get(STARTED_KEY))
    async with _run_graph(args, saver, tools) as graph:
        run = Run(args, graph, context, thread_config(args.thread_id, metadata))
        if not args.quiet:
            say(f"Resuming thread {args.thread_id} ({run_status(snapshot).text()})")
        payload: Command[Any] | None = None if review is None else Command(resume=review)
        return await drive(run, payload, snapshot.values)

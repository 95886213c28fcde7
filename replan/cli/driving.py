"""Carrying a run on: stream it to its end or its next pause with live progress, answer plan
reviews on a terminal, then report how it stands (`replan.cli.outcome`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import openai
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from rich.console import Console

from replan.cli.call_review import ask_call, is_call_review
from replan.cli.display import TICK_SECONDS, Display, LiveDisplay, NullDisplay, PlainDisplay
from replan.cli.outcome import report
from replan.cli.output import ExitCode, say
from replan.cli.pricing import run_pricing
from replan.cli.progress import ProgressPrinter
from replan.cli.review import ask_review, refused_because
from replan.cli.stored_runs import resume_hint
from replan.graphs.context import Context
from replan.graphs.errors import ReplanError
from replan.graphs.graph_state import PlanExecuteState, reviewed_steps
from replan.graphs.model.http_client import model_retries_reported
from replan.graphs.plan.scheduling import steps_left

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


async def drive(run: Run, payload: Any, carried: Mapping[str, Any] | None = None) -> ExitCode:
    """Run to the end or the next pause, answering plan reviews on a terminal; report.
    `carried` is the state a resume goes on from (its usage and plan so far); a new turn's
    usage and plan start empty."""
    carried = carried or {}
    printer = ProgressPrinter(
        NullDisplay(),
        usage=carried.get("usage"),
        pricing=run_pricing(run.context.settings()),
        plain_answer=run.context.answer == "plain",
        plan=steps_left(cast(PlanExecuteState, carried)),
    )
    failure: Exception | None = None
    try:
        while True:
            await _stream(run, printer, payload)
            snapshot = await run.graph.aget_state(run.config)
            if not snapshot.interrupts or not sys.stdin.isatty():
                break
            value = snapshot.interrupts[0].value
            if is_call_review(value):
                answer = ask_call(value)
            else:
                answer = ask_review(reviewed_steps(value), refused_because(value))
            if answer is None:
                break
            payload = Command(resume=answer)
    except (ReplanError, openai.APIError) as exc:
        failure = exc
        snapshot = await run.graph.aget_state(run.config)  # as the failure left it
    if snapshot.interrupts and (reason := refused_because(snapshot.interrupts[0].value)):
        say(f"replan: the edited plan was not taken: {reason}")
    return report(run.args, snapshot, failure)

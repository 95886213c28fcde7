"""`replan show` and `replan threads`: read stored runs, and nothing but read them.

They load no model client: a run's state is read through `reading_graph`, a graph with the
plan–execute graph's nodes, channels and state schema whose nodes never run, so neither
langchain-openai nor the nodes' code is imported (`replan.cli.commands` imports `run` and
`resume` only for those commands). What a stored run shows only depends on the checkpoint and
on which nodes each channel triggers: the same for both graphs (a test compares their
snapshots).
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from replan.cli.call_review import is_call_review
from replan.cli.output import CliError, ExitCode, emit, say
from replan.cli.run_settings import as_options
from replan.cli.summary import cli_start, describe_run, summarize, threads_table
from replan.graphs.context import Context
from replan.graphs.graph_state import (
    NODES,
    START_TURN,
    PlanExecuteInput,
    PlanExecuteOutput,
    PlanExecuteState,
)
from replan.graphs.persistence import (
    DEFAULT_DB,
    database_exists,
    display_target,
    open_checkpointer,
    stored_thread_ids,
)
from replan.graphs.setting_checks import check_prices
from replan.graphs.thread_leases import thread_lease


def reading_graph(saver: BaseCheckpointSaver[str]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A graph that reads the runs `saver` holds as the plan–execute graph does (same nodes,
    channels and schemas), without its nodes' code; it cannot run them."""
    builder = StateGraph(
        PlanExecuteState,
        context_schema=Context,
        input_schema=PlanExecuteInput,
        output_schema=PlanExecuteOutput,
    )
    for name in NODES:
        builder.add_node(name, _never_run)
    builder.add_edge(START, START_TURN)
    return builder.compile(checkpointer=saver)


def _never_run(state: PlanExecuteState) -> None:
    raise RuntimeError("the reading graph only reads stored runs")


def thread_config(thread_id: str, metadata: dict[str, Any] | None = None) -> RunnableConfig:
    """The config naming a thread (and the metadata its new checkpoints get)."""
    return {"configurable": {"thread_id": thread_id}, "metadata": metadata or {}}


def resume_hint(args: argparse.Namespace) -> str:
    """The command that continues the run `args` name (a URL's password masked)."""
    db = "" if args.db == DEFAULT_DB else f" --db {shlex.quote(display_target(args.db))}"
    return f"replan resume --thread-id {args.thread_id}{db}"


async def _holder(saver: BaseCheckpointSaver[str], thread_id: str) -> str:
    """The process running `thread_id` now ("" for none)."""
    lease = await thread_lease(saver, thread_id)
    return lease.who() if lease else ""


def review_hint(args: argparse.Namespace, value: Any = None) -> str:
    """The commands that answer the review waiting in the run `args` name: a plan's, or a
    tool call's when the interrupt `value` asks about one."""
    last = "--respond RESULT" if is_call_review(value) else "--edit-plan STEP ..."
    return f"{resume_hint(args)} --approve | --reject [REASON] | {last}"


def require_db(args: argparse.Namespace) -> None:
    """Refuse a SQLite file that does not exist (NO_SUCH_RUN): reading never creates one."""
    if not database_exists(args.db):
        raise CliError(ExitCode.NO_SUCH_RUN, f"no database at {display_target(args.db)}")


async def stored_snapshot(
    saver: BaseCheckpointSaver[str], args: argparse.Namespace
) -> StateSnapshot:
    """The state of the thread `args` names, its checkpoint metadata in `metadata`; CliError
    when the thread is unknown."""
    snapshot = await reading_graph(saver).aget_state(thread_config(args.thread_id))
    if snapshot.metadata is None:
        raise CliError(
            ExitCode.NO_SUCH_RUN,
            f"no run with thread id {args.thread_id} in {display_target(args.db)}",
        )
    return snapshot


async def run_start(
    saver: BaseCheckpointSaver[str], thread_id: str, snapshot: StateSnapshot
) -> str | None:
    """When the run `snapshot` shows started: the time the CLI stored with it, else (a run
    started by the library or a server) when its thread's first checkpoint was saved (the first
    input's, which LangGraph numbers step -1)."""
    if stored := cli_start(snapshot):
        return stored
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    first = [saved async for saved in saver.alist(config, filter={"step": -1}, limit=1)]
    return first[0].checkpoint["ts"] if first else None


def _given_prices(args: argparse.Namespace) -> dict[str, float] | None:
    """`--price-in` and `--price-out` of `show` (both or neither)."""
    try:
        check_prices(args.price_in, args.price_out)
    except ValueError as exc:
        raise CliError(ExitCode.USAGE, as_options(str(exc))) from None
    if args.price_in is None:
        return None
    return {"price_in": args.price_in, "price_out": args.price_out}


async def cmd_show(args: argparse.Namespace) -> ExitCode:
    """Print a stored run: status (and why it failed), settings, plan, steps, tasks, model
    usage (and cost), answer."""
    prices = _given_prices(args)
    require_db(args)
    async with open_checkpointer(args.db, read_only=True) as saver:
        snapshot = await stored_snapshot(saver, args)
        started = await run_start(saver, args.thread_id, snapshot)
        holder = await _holder(saver, args.thread_id)
    if args.json:
        summary = summarize(
            args.thread_id, snapshot, prices=prices, started_at=started, holder=holder
        )
        emit(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        hint = review_hint(args, snapshot.interrupts[0].value if snapshot.interrupts else None)
        emit(
            describe_run(
                args.thread_id,
                snapshot,
                prices,
                started_at=started,
                answer_with=hint,
                holder=holder,
            )
        )
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
        graph = reading_graph(saver)
        runs = [
            (thread_id, await graph.aget_state(thread_config(thread_id)))
            for thread_id in await stored_thread_ids(saver)
        ]
        holders = {thread_id: await _holder(saver, thread_id) for thread_id, _ in runs}
        if args.json:
            summaries = [
                summarize(
                    thread_id,
                    snapshot,
                    started_at=await run_start(saver, thread_id, snapshot),
                    holder=holders[thread_id],
                )
                for thread_id, snapshot in runs
            ]
            emit(json.dumps(summaries, ensure_ascii=False, indent=2))
            return ExitCode.OK
    emit(threads_table(runs, holders))
    return ExitCode.OK

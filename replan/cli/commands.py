"""What each `replan` command does, loading only what it needs.

`replan.cli.main` parses the command line and calls `execute(args)`. `show`, `threads` and a
`resume` of a run that has ended only read the database (`replan.cli.stored_runs`); `run` and a
`resume` that goes on load the graph and the model client (`replan.cli.runs`) once the
arguments and the stored run have been checked.
"""

from __future__ import annotations

import argparse

from replan.cli.call_review import call_answer, is_call_review
from replan.cli.outcome import report
from replan.cli.output import CliError, ExitCode, one_line, say
from replan.cli.review import review_from_flags
from replan.cli.run_settings import cli_context
from replan.cli.stored_runs import (
    cmd_show,
    cmd_threads,
    require_db,
    resume_hint,
    stored_snapshot,
)
from replan.cli.summary import is_finished, run_status
from replan.graphs.persistence import (
    DatabaseUnavailableError,
    open_checkpointer,
    saved_settings,
)
from replan.graphs.thread_leases import (
    LeaseLostError,
    LeaseSettingError,
    ThreadHeldError,
    lease_seconds,
)


async def cmd_run(args: argparse.Namespace) -> ExitCode:
    """Start a new run (`replan.cli.runs.cmd_run`)."""
    from replan.cli import runs

    return await runs.cmd_run(args)


async def cmd_resume(args: argparse.Namespace) -> ExitCode:
    """Continue a stopped run from its last checkpoint (answering a pending plan review); a run
    that has ended is reported as it stands."""
    require_db(args)
    async with open_checkpointer(args.db) as saver:
        snapshot = await stored_snapshot(saver, args)
        stored = dict(snapshot.metadata or {})
        args.resume_hint = resume_hint(args)
        context = cli_context(args, saved_settings(snapshot.values, stored))
        answers = args.approve or args.reject is not None or bool(args.edit_plan)
        if (answers or args.respond is not None) and not snapshot.interrupts:
            ended = " (it has ended)" if is_finished(snapshot) else ""
            raise CliError(
                ExitCode.USAGE, f"thread {args.thread_id} has no plan waiting for approval{ended}"
            )
        if snapshot.interrupts and is_call_review(snapshot.interrupts[0].value):
            review = call_answer(args)
        elif args.respond is not None:
            raise CliError(ExitCode.USAGE, "--respond answers a waiting tool call; a plan waits")
        else:
            review = review_from_flags(args)
        if is_finished(snapshot):
            say(f"Thread {args.thread_id} has already ended ({run_status(snapshot).text()}):")
            return report(args, snapshot, None)
        from replan.cli import runs

        return await runs.continue_run(args, saver, stored, snapshot, context, review)


async def execute(args: argparse.Namespace) -> ExitCode:
    """Run the parsed command; a database that cannot be used is a `CliError`
    (DATABASE_UNAVAILABLE), a thread another process runs one too (THREAD_BUSY)."""
    commands = {"run": cmd_run, "resume": cmd_resume, "show": cmd_show, "threads": cmd_threads}
    try:
        if args.command in ("run", "resume"):  # a run holds its thread: refused before it starts
            lease_seconds()
        return await commands[args.command](args)
    except DatabaseUnavailableError as exc:
        raise CliError(ExitCode.DATABASE_UNAVAILABLE, one_line(str(exc))) from None
    except (ThreadHeldError, LeaseLostError) as exc:
        raise CliError(ExitCode.THREAD_BUSY, one_line(str(exc))) from None
    except LeaseSettingError as exc:
        raise CliError(ExitCode.USAGE, str(exc)) from None

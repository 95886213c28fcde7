"""Entry point of the `replan` console script: parse, dispatch, turn every failure into one line.

The commands that need LangGraph and the model client (`replan.cli.commands`,
`replan.cli.check`) are imported only once the arguments are good, so `replan --help`,
`--version` and option errors answer at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import uuid

from replan.cli.interrupts import CommandLoop, terminate_as_interrupt
from replan.cli.objective_input import check_text, read_objective
from replan.cli.output import CliError, ExitCode, one_line, say
from replan.cli.parser import build_parser

DEBUG_ENV = "REPLAN_DEBUG"
"""Set to 1 to get a traceback instead of the one-line message for an unexpected error."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `replan` console script; returns the exit code.

    Ctrl-C and SIGTERM stop a command with exit code 130. With `argv` None (the process's own
    command line), a stopped command whose tool still works in a worker thread ends the
    process at once rather than wait for the tool to return.
    """
    args = build_parser().parse_args(argv)
    args.resume_hint = ""  # set once the run is saved: the command that continues it
    # psycopg logs what it ignores while closing a lost connection; the error says it in one line.
    if not (psycopg_log := logging.getLogger("psycopg")).handlers:
        psycopg_log.addHandler(logging.NullHandler())
    if args.command == "run" and args.thread_id is None:
        args.thread_id = uuid.uuid4().hex[:12]
    loop = CommandLoop()
    try:
        with terminate_as_interrupt():
            return _execute(args, loop)
    except KeyboardInterrupt:
        hint = f"; continue with: {args.resume_hint}" if args.resume_hint else ""
        say(f"replan: interrupted{hint}")
        if argv is None and loop.busy:
            sys.stdout.flush()
            os._exit(ExitCode.INTERRUPTED)  # Python would wait for the tool's thread at exit
        return int(ExitCode.INTERRUPTED)


def _execute(args: argparse.Namespace, loop: CommandLoop) -> int:
    """Run the command `args` name; every failure but an interrupt becomes one line."""
    try:
        check_text(args)
        if args.command == "run":
            args.objective_text = read_objective(args)
        if args.command == "check":
            from replan.cli import check

            return int(check.execute(args))
        if args.command == "ui":
            from replan.ui import serving

            return int(serving.serve(args))
        from replan.cli import commands

        return int(loop.run(commands.execute(args)))
    except CliError as exc:
        say(f"replan: {exc}")
        return int(exc.code)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        say(f"replan: unexpected error: {type(exc).__name__}: {one_line(str(exc))}")
        if args.resume_hint:
            say(f"The run is saved; continue it with: {args.resume_hint}")
        return int(ExitCode.FAILED)


if __name__ == "__main__":
    sys.exit(main())

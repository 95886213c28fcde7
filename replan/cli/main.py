"""Entry point of the `replan` console script: parse, dispatch, turn every failure into one line.

The commands that need LangGraph and the model client (`replan.cli.commands`,
`replan.cli.check`) are imported only once the arguments are good, so `replan --help`,
`--version` and option errors answer at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid

from replan.cli.output import CliError, ExitCode, one_line, say
from replan.cli.parser import build_parser, check_text, read_objective

DEBUG_ENV = "REPLAN_DEBUG"
"""Set to 1 to get a traceback instead of the one-line message for an unexpected error."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `replan` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    args.resume_hint = ""  # set once the run is saved: the command that continues it
    # psycopg logs what it ignores while closing a lost connection; the error says it in one line.
    if not (psycopg_log := logging.getLogger("psycopg")).handlers:
        psycopg_log.addHandler(logging.NullHandler())
    if args.command == "run" and not args.thread_id:
        args.thread_id = uuid.uuid4().hex[:12]
    try:
        check_text(args)
        if args.command == "run":
            args.objective_text = read_objective(args)
        if args.command == "check":
            from replan.cli import check

            return int(check.execute(args))
        from replan.cli import commands

        return int(asyncio.run(commands.execute(args)))
    except CliError as exc:
        say(f"replan: {exc}")
        return int(exc.code)
    except KeyboardInterrupt:
        hint = f"; continue with: {args.resume_hint}" if args.resume_hint else ""
        say(f"replan: interrupted{hint}")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        say(f"replan: unexpected error: {type(exc).__name__}: {one_line(str(exc))}")
        if args.resume_hint:
            say(f"The run is saved; continue it with: {args.resume_hint}")
        return int(ExitCode.FAILED)


if __name__ == "__main__":
    sys.exit(main())

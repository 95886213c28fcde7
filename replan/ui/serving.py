"""The `replan ui` command: serve the page over the database `--db` names until Ctrl-C."""

from __future__ import annotations

import argparse
import errno

from replan.cli.output import CliError, ExitCode, emit, one_line, say
from replan.graphs.persistence import DatabaseUnavailableError, database_exists, display_target


def serve(args: argparse.Namespace) -> ExitCode:
    """Print the page's address (with its token) and serve it; a missing database, one that
    cannot be read or a port that is taken is one line."""
    if not database_exists(args.db):
        where = display_target(args.db)
        raise CliError(ExitCode.NO_SUCH_RUN, f"no database at {where} (replan run creates it)")
    from replan.ui.server import UiServer

    try:
        server = UiServer(args.db, args.port)
    except DatabaseUnavailableError as exc:
        raise CliError(ExitCode.DATABASE_UNAVAILABLE, one_line(str(exc))) from None
    except OSError as exc:
        why = "is taken" if exc.errno == errno.EADDRINUSE else f"cannot be used: {exc.strerror}"
        raise CliError(ExitCode.USAGE, f"port {args.port} {why}") from None
    emit(server.url)
    say(f"replan ui: the runs in {display_target(args.db)}; open the address above (Ctrl-C stops)")
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        say("replan ui: stopped")
    finally:
        server.close()
    return ExitCode.OK

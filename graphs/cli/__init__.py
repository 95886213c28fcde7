"""The `replan` command line and its helpers (progress display, run persistence)."""

from replan.graphs.cli.commands import main

__all__ = ["main"]

"""The `replan` command line: `main` (entry point), `parser`, `commands` (run, resume, show,
threads), `check`, and the output helpers (`output`, `progress`, `display`, `summary`)."""

from replan.graphs.cli.main import main

__all__ = ["main"]

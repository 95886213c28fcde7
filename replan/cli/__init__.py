"""The `replan` command line: `main` (entry point), `parser`, `commands` (run, resume, show,
threads), `check`, and the output helpers (`output`, `progress`, `display`, `summary`)."""

from __future__ import annotations

from replan.cli.main import main

__all__ = ["main"]

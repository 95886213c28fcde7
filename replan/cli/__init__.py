"""The `replan` command line: `main` (entry point), `parser`, `commands` (run, resume, show,
threads), `check`, the output helpers (`output`, `progress`, `display`, `summary`) and
`pricing` (what a run's tokens cost)."""

from __future__ import annotations

from replan.cli.main import main

__all__ = ["main"]

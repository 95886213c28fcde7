"""The `replan` command line: `main` (entry point), `parser`, `interrupts` (Ctrl-C and SIGTERM),
`commands` (which command loads what), `runs` (run and follow-ups, a resume that goes on),
`driving` (streaming a run, its plan review on a terminal: `review`), `outcome` (how a run
stands, its exit code), `run_settings` (a run's stored settings), `tool_loading` (`--tools`),
`stored_runs` (show and threads, read without the model stack), `summary` and `usage_report`
(a stored run for people and for scripts), `progress` and `display` (live progress), `output`
(exit codes, one-line errors), `pricing` (what a run's tokens cost) and `check` (`replan
check`: `probes`, `server_check`, `server_verdict`)."""

from __future__ import annotations

from replan.cli.main import main

__all__ = ["main"]

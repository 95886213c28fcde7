"""The start-up benchmark runs every command it times, on a database a scripted run made."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_cli_startup import commands, make_database, measure, report


@pytest.mark.slow  # real processes
def test_the_benchmark_times_each_command_and_reports_the_ratios(tmp_path: Path) -> None:
    db = make_database(tmp_path)
    times = measure(db, runs=1)
    assert list(times) == [command.label for command in commands(db)]
    assert all(len(seconds) == 1 and seconds[0] > 0 for seconds in times.values())
    text, _ = report(times, db)
    assert "replan show: the old import path takes" in text
    assert text.splitlines()[-1].startswith("target (under 0.5 s on an idle two-core machine): ")

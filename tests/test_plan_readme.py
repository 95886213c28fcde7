"""The README's plan-documents example runs as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme import README, python_blocks


def test_the_readme_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPLAN_PLANS_DIR", str(tmp_path / "plans"))
    (code,) = python_blocks("Plan documents")
    assert "plan_tools(" in code
    exec(compile(code, f"{README}:plan-documents", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert "revision 2" in printed and '"bytes_written": 16' in printed

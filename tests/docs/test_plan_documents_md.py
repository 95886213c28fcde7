"""docs/plan-documents.md's examples run as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.readme import doc, python_blocks

PLANS = doc("plan-documents.md")


def test_the_doc_s_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPLAN_PLANS_DIR", str(tmp_path / "plans"))
    (code,) = python_blocks("Example: two agents on one plan", PLANS)
    assert "plan_tools(" in code
    exec(compile(code, f"{PLANS}:plan-documents", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert "revision 2" in printed and '"bytes_written": 16' in printed


def test_the_doc_s_postgres_example_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    from replan.state.plans import PostgresPlanStorage

    monkeypatch.setenv("DATABASE_URL", postgres_url)
    (code,) = python_blocks("PostgreSQL", PLANS)
    exec(compile(code, f"{PLANS}:postgres", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out == "1 True\n"
    with PostgresPlanStorage(postgres_url) as storage:  # it is in the database, not in memory
        stored = storage.get("launch")
    assert stored is not None and (stored.content, stored.author) == ("1. build", "ops")

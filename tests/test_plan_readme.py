"""The README's plan-documents example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def plan_section_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Plan documents\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert blocks, "the Plan documents section has no python example"
    return blocks[0]


def test_the_readme_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPLAN_PLANS_DIR", str(tmp_path / "plans"))
    code = plan_section_example()
    assert "plan_tools(" in code
    exec(compile(code, f"{README}:Plan documents", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert "revision 2" in printed and '"bytes_written": 16' in printed

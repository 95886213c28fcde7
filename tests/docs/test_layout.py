"""The README stays a short introduction with the two commands; every link in the docs leads
somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.readme import README, REPO, documents

TEST_COMMAND = 'pip install -e ".[dev]" && python -m pytest'
RUN_COMMAND = 'pip install -e . && OPENAI_API_KEY=sk-... replan run "'

WRITTEN_ELSEWHERE = {"docs/serving.md", "docs/tool-steps.md", "docs/small-models.md"}
"""Pages other branches are writing; linked already, checked once they exist."""


def test_the_readme_is_short_and_has_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    fenced = re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S)
    assert any(block.strip() == TEST_COMMAND for block in fenced)
    assert any(block.strip().startswith(RUN_COMMAND) for block in fenced)


def test_ci_runs_the_readme_s_test_command_verbatim() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci.splitlines()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)}


def _links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize(
    "path", [*documents(), REPO / "CHANGELOG.md"], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_relative_link_resolves(path: Path) -> None:
    broken = []
    for link in _links(path):
        if re.match(r"[a-z]+:", link):
            continue  # https:, mailto:
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            if str(file.relative_to(REPO)) not in WRITTEN_ELSEWHERE:
                broken.append(link)
            continue
        if anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(link)
    assert broken == []


def test_the_docs_index_lists_every_page() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    pages |= {Path(name).name for name in WRITTEN_ELSEWHERE}
    assert {page for page in pages if f"]({page})" not in index} == set()

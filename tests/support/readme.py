"""Pull code examples and text out of README.md and docs/*.md so the suite runs and checks them.

Blocks are found by the heading they stand under (`## Section`, any level); a section runs to the
next heading of the same or a higher level. An HTML comment on the line before a ```python
block says who runs it:

- none: `tests/docs/test_code_blocks.py` runs it, against the scripted OpenAI server;
- `<!-- tested-in: tests/path/test_file.py -->`: that test file runs it with its own checks;
- `<!-- not-run: why -->`: nothing runs it (say why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"

_HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.M)
_MARK = re.compile(r"<!--\s*(tested-in|not-run):\s*(.*?)\s*-->")


def doc(name: str) -> Path:
    """A file of docs/ by name (`"cli.md"`)."""
    return DOCS / name


def documents() -> list[Path]:
    """README.md and every docs/*.md file."""
    return [README, *sorted(DOCS.glob("*.md"))]


def section_text(section: str, path: Path = README) -> str:
    """The text under the heading `section` of `path`, up to the next heading of its level."""
    text = path.read_text(encoding="utf-8")
    headings = list(_HEADING.finditer(_without_code(text)))
    for index, heading in enumerate(headings):
        if heading.group(2) != section:
            continue
        level = len(heading.group(1))
        end = next(
            (h.start() for h in headings[index + 1 :] if len(h.group(1)) <= level), len(text)
        )
        return text[heading.end() : end]
    raise AssertionError(f"{path.name} has no section '{section}'")


def run_example(code: str, name: str, base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run an example's `code` as written (`name` for tracebacks), its OpenAI clients sent to
    the scripted server at `base_url` with a test key."""
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    exec(compile(code, name, "exec"), {"__name__": "readme"})


def python_blocks(section: str, path: Path = README) -> list[str]:
    """The ```python blocks under the heading `section` of `path`, in order."""
    blocks = re.findall(r"^```python\n(.*?)^```", section_text(section, path), re.M | re.S)
    if not blocks:
        raise AssertionError(f"{path.name} section '{section}' has no python example")
    return blocks


@dataclass(frozen=True)
class Block:
    """One ```python block of a document: where it is, its code and the mark above it."""

    path: Path
    line: int
    code: str
    mark: str | None  # "tested-in" or "not-run"
    detail: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """Every ```python block of `path`, with the mark on the line before it, if any."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.fullmatch(before.strip())
        found.append(
            Block(
                path,
                line,
                match.group(1),
                mark.group(1) if mark else None,
                mark.group(2) if mark else "",
            )
        )
    return found


def _without_code(text: str) -> str:
    """`text` with the lines of fenced code blanked (kept in length), so `# comments` in code
    are not taken for headings."""
    return re.sub(
        r"^(```|~~~).*?^\1[^\n]*$",
        lambda m: re.sub(r"[^\n]", " ", m.group(0)),
        text,
        flags=re.M | re.S,
    )

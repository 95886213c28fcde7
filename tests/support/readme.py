"""Pull code examples out of README.md (or another document) so the suite runs them and they
cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks(section: str, document: Path = README) -> list[str]:
    """The ```python blocks under the `## {section}` heading of `document`, in order."""
    text = document.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        raise AssertionError(f"{document.name} has no section '## {section}'")
    blocks = re.findall(r"^```python\n(.*?)^```", match.group(1), re.M | re.S)
    if not blocks:
        raise AssertionError(f"{document.name} section '{section}' has no python example")
    return blocks

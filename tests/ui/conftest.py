"""The folder `replan ui`'s tests run the CLI in: it holds the `price` tools file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_harness import PRICE_TOOLS


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "shop.py").write_text(PRICE_TOOLS)
    return tmp_path

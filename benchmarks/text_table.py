"""Lines of the benchmarks' text tables."""

from __future__ import annotations

from collections.abc import Sequence


def table_line(cells: Sequence[str], columns: Sequence[tuple[str, int]]) -> str:
    """One line: each cell padded to its column's width, the first two (names) to the left,
    the figures to the right."""
    return "".join(
        cell.ljust(width) if i < 2 else cell.rjust(width)
        for i, (cell, (_, width)) in enumerate(zip(cells, columns, strict=True))
    )

"""Every notebook in notebooks/ runs top to bottom offline, and is stored without outputs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support.dev_server import OFFLINE_ENV, REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 60


def test_there_is_a_walkthrough() -> None:
    assert REPO / "notebooks" / "walkthrough.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_the_notebook_is_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_the_notebook_runs_from_a_plain_install(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel starts outside the repository: only the installed `replan` is importable
    (not the test suite's helpers)."""
    for name, value in OFFLINE_ENV.items():  # the kernel inherits this environment
        monkeypatch.setenv(name, value)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    outputs = [output for cell in code for output in cell.outputs]
    assert all(output.output_type != "error" for output in outputs)
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.strip(), "the notebook shows nothing"

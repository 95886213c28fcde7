"""`replan.cli.tool_loading`: tools named as langgraph.json names graphs, and every way a
reference can fail, each in one line."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.cli.tool_loading import ToolLoadingError, load_tools, stored_reference

TOOLS_FILE = """
from langchain_core.tools import tool
from helper import SUFFIX  # a neighbour of this file, imported as a script would


@tool
def price(item: str) -> str:
    \"\"\"The price of an item.\"\"\"
    return f"{item} costs 4.20{SUFFIX}"


@tool
def stock(item: str) -> int:
    \"\"\"How many of an item are in stock.\"\"\"
    return 3


TOOLS = [price, stock]
ONE = price
AS_TUPLE = (stock,)
NOT_TOOLS = 42
PLAIN_FUNCTIONS = [len]
TWICE = [price, price]


def _create(subject: str) -> str:
    \"\"\"Create a task.\"\"\"
    return subject


TASK_TOOL = [tool("TaskCreate")(_create)]
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """`tmp_path` as the current folder, holding tools.py, its helper and a package."""
    (tmp_path / "tools.py").write_text(TOOLS_FILE)
    (tmp_path / "helper.py").write_text('SUFFIX = " (list price)"\n')
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "catalog.py").write_text(TOOLS_FILE)
    (tmp_path / "broken.py").write_text("def nope(:\n    pass\n")
    (tmp_path / "failing.py").write_text("import no_such_dependency_here\n")
    (tmp_path / "raising.py").write_text("raise RuntimeError('no\\nconfig found')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:  # shop, helper: other tests reuse the names
        del sys.modules[name]


def test_a_file_gives_its_list_of_tools(folder: Path) -> None:
    tools = load_tools("tools.py:TOOLS")
    assert [tool.name for tool in tools] == ["price", "stock"]
    assert tools[0].invoke({"item": "A"}) == "A costs 4.20 (list price)"
    assert [t.name for t in load_tools("./tools.py:ONE")] == ["price"]  # one tool
    assert [t.name for t in load_tools(f"{folder}/tools.py:AS_TUPLE")] == ["stock"]


def test_a_module_gives_its_tools(folder: Path) -> None:
    assert [tool.name for tool in load_tools("shop.catalog:TOOLS")] == ["price", "stock"]


def test_a_run_stores_a_file_by_its_absolute_path(folder: Path) -> None:
    assert stored_reference("./tools.py:TOOLS") == f"{folder / 'tools.py'}:TOOLS"
    assert stored_reference("shop.catalog:TOOLS") == "shop.catalog:TOOLS"
    elsewhere = folder / "shop"
    assert [t.name for t in load_tools(stored_reference("tools.py:ONE"), base=elsewhere)] == [
        "price"
    ]


FAILURES = {
    "tools.py": "--tools tools.py: expected PATH.py:NAME or package.module:NAME",
    "tools.py:": "--tools tools.py:: expected PATH.py:NAME or package.module:NAME",
    "tools.py:1x": "--tools tools.py:1x: expected PATH.py:NAME or package.module:NAME",
    "my-tools:T": "--tools my-tools:T: 'my-tools' is not a file (.py) or a module",
    "missing.py:TOOLS": "--tools missing.py:TOOLS: no file {folder}/missing.py",
    "broken.py:TOOLS": (
        "--tools broken.py:TOOLS: {folder}/broken.py line 1: SyntaxError: invalid syntax"
    ),
    "failing.py:TOOLS": (
        "--tools failing.py:TOOLS: importing {folder}/failing.py failed: ModuleNotFoundError: "
        "No module named 'no_such_dependency_here'"
    ),
    "raising.py:TOOLS": (
        "--tools raising.py:TOOLS: importing {folder}/raising.py failed: RuntimeError: no "
        "config found"
    ),
    "nowhere.tools:TOOLS": "--tools nowhere.tools:TOOLS: no module named nowhere.tools",
    "shop.nothing:TOOLS": "--tools shop.nothing:TOOLS: no module named shop.nothing",
    "tools.py:MISSING": "--tools tools.py:MISSING: {folder}/tools.py has no MISSING",
    "shop.catalog:MISSING": "--tools shop.catalog:MISSING: shop.catalog has no MISSING",
    "tools.py:NOT_TOOLS": (
        "--tools tools.py:NOT_TOOLS: NOT_TOOLS is a int, not a LangChain tool or a list of them "
        "(wrap a function with langchain_core.tools.tool)"
    ),
    "tools.py:PLAIN_FUNCTIONS": (
        "--tools tools.py:PLAIN_FUNCTIONS: tools[0] is a builtin_function_or_method, not a "
        "LangChain tool: wrap a function with langchain_core.tools.tool"
    ),
    "tools.py:TWICE": (
        "--tools tools.py:TWICE: two tools are named 'price'; tool names must be unique"
    ),
    "tools.py:TASK_TOOL": (
        "--tools tools.py:TASK_TOOL: tool name 'TaskCreate' is taken by a task tool the graph "
        "adds itself; rename your tool"
    ),
}


@pytest.mark.parametrize(("reference", "message"), FAILURES.items(), ids=list(FAILURES))
def test_a_reference_that_gives_no_usable_tools_is_one_line(
    folder: Path, reference: str, message: str
) -> None:
    with pytest.raises(ToolLoadingError) as caught:
        load_tools(reference)
    assert str(caught.value) == message.format(folder=folder)
    assert "\n" not in str(caught.value)


def test_a_bad_tool_name_is_refused(folder: Path) -> None:
    (folder / "named.py").write_text(
        textwrap.dedent(
            """
            from langchain_core.tools import tool

            def look_up(item: str) -> str:
                "Look an item up."
                return item

            TOOLS = [tool("look up")(look_up)]
            """
        )
    )
    with pytest.raises(ToolLoadingError, match=r"^--tools named.py:TOOLS: tool name 'look up' "):
        load_tools("named.py:TOOLS")
